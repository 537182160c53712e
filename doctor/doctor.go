// Package doctor checks an MCP gateway from the outside (a URL: TLS, the
// 401 challenge, RFC 9728 metadata, the authorization server, a token) and,
// for an operator, from its configuration file. Each check is one finding,
// OK, WARN or FAIL, and every WARN and FAIL says what to change.
package doctor

import (
	"fmt"
	"io"
)

// Status is a finding's verdict.
type Status int

// The verdicts, in rising severity.
const (
	OK Status = iota
	Warn
	Fail
)

func (s Status) String() string {
	return [...]string{"OK", "WARN", "FAIL"}[s]
}

// Finding is the result of one check.
type Finding struct {
	Status Status
	Check  string // what was checked
	Detail string // what was found
	Fix    string // what to change (WARN and FAIL)
}

// Report is the findings of a run, in the order they were made.
type Report struct {
	Findings []Finding
}

func (r *Report) add(s Status, check, detail, fix string) {
	r.Findings = append(r.Findings, Finding{Status: s, Check: check, Detail: detail, Fix: fix})
}

func (r *Report) ok(check, detail string)        { r.add(OK, check, detail, "") }
func (r *Report) warn(check, detail, fix string) { r.add(Warn, check, detail, fix) }
func (r *Report) fail(check, detail, fix string) { r.add(Fail, check, detail, fix) }

// Failed says whether any check failed.
func (r *Report) Failed() bool {
	for _, f := range r.Findings {
		if f.Status == Fail {
			return true
		}
	}
	return false
}

// Find returns the first finding of check, for tests.
func (r *Report) Find(check string) (Finding, bool) {
	for _, f := range r.Findings {
		if f.Check == check {
			return f, true
		}
	}
	return Finding{}, false
}

// Print writes one line per finding: verdict, check, detail and, for WARN
// and FAIL, the fix.
func (r *Report) Print(w io.Writer) {
	for _, f := range r.Findings {
		line := fmt.Sprintf("%-4s  %-22s %s", f.Status, f.Check, f.Detail)
		if f.Fix != "" {
			line += " — " + f.Fix
		}
		fmt.Fprintln(w, line)
	}
}
