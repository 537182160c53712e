package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The paired comparisons: one call made two ways (a DPoP-bound token
// against a Bearer one, the combined /mcp against /mcp/<name>, the local
// shim and daemon against TCP), one call of each way in turn, one at a
// time, so both see the same machine at the same moment and the
// difference of their p50s is what the second way adds.

// Pair names, in the order a run makes them.
const (
	pairDPoP     = "dpop"
	pairCombined = "combined"
	pairLocal    = "local"
)

var allPairs = []string{pairDPoP, pairCombined, pairLocal}

// PairResult is one paired comparison. A is the reference way, B the one
// whose cost is asked; Calls counts the measured calls of each.
type PairResult struct {
	Name       string  `json:"name"`
	A          string  `json:"a"`
	B          string  `json:"b"`
	Skipped    string  `json:"skipped,omitempty"` // why it did not run
	Tool       string  `json:"tool,omitempty"`
	Calls      int     `json:"calls"`
	ALatency   Summary `json:"a_latency"`
	BLatency   Summary `json:"b_latency"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	// SecondClient is the local pair's process census: the daemon's
	// processes before any MCP 2026-07-28 client, after a first client's
	// first call, and after a second client's (through shims of their
	// own); nil when not taken.
	SecondClient *ProcessSteps `json:"second_client,omitempty"`
	// ClientWork is the p50 of what B's client does more per request
	// before it sends (DPoP: making a proof), part of B's latency.
	ClientWork time.Duration `json:"b_client_work_ns,omitempty"`
}

// ProcessSteps counts a system's processes at three moments.
type ProcessSteps struct {
	Before int `json:"before"`
	First  int `json:"after_first_client"`
	Second int `json:"after_second_client"`
}

// pairSide is one way of making the call: a session and the tool name
// that way knows the call by.
type pairSide struct {
	s    *session
	tool Tool
}

// measurePair alternates calls of a and b: unmeasured for warmup, then
// measured for d.
func measurePair(ctx context.Context, res *PairResult, a, b pairSide, warmup, d, timeout time.Duration) {
	var errs errOnce
	var la, lb Latencies
	one := func(side pairSide, into *Latencies) {
		t0 := time.Now()
		if err := call(ctx, side.s, side.tool, timeout); err != nil {
			errs.add(err)
			return
		}
		if into != nil {
			*into = append(*into, time.Since(t0))
		}
	}
	for end := time.Now().Add(warmup); time.Now().Before(end) && ctx.Err() == nil; {
		one(a, nil)
		one(b, nil)
	}
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
		one(a, &la)
		one(b, &lb)
	}
	res.Tool = a.tool.Name
	res.Calls = min(len(la), len(lb))
	res.ALatency, res.BLatency = Summarize(la), Summarize(lb)
	res.Errors = int(errs.n.Load())
	res.FirstError = errs.String()
}

// pairEnv is what the pairs need of the run: its settings, its client,
// where logs go, and the systems already running (by name).
type pairEnv struct {
	cfg     Config
	client  *mcp.Client
	logDir  string
	running map[string]target
}

// runPairs makes every pair of cfg.Pairs, each skipped with its reason
// when what it needs is missing.
func runPairs(ctx context.Context, pe pairEnv, stderr io.Writer) []PairResult {
	var out []PairResult
	for _, name := range pe.cfg.Pairs {
		var res PairResult
		switch {
		case pe.cfg.Skip[name] != "":
			res.Skipped = pe.cfg.Skip[name]
		case name == pairDPoP:
			res = pe.dpop(ctx)
		case name == pairCombined:
			res = pe.combined(ctx)
		case name == pairLocal:
			res = pe.local(ctx)
		}
		res.Name = name
		out = append(out, res)
		switch {
		case res.Skipped != "":
			progress(stderr, "pair "+name, "skipped: %s", res.Skipped)
		default:
			progress(stderr, "pair "+name, "%s p50 %s, %s p50 %s over %d calls each (%d errors) %s",
				res.A, fmtDur(res.ALatency.P50), res.B, fmtDur(res.BLatency.P50), res.Calls, res.Errors, errNote(res.FirstError))
		}
	}
	return out
}

// fail counts err and keeps it when it is the first.
func (res *PairResult) fail(err error) {
	res.Errors++
	if res.FirstError == "" {
		res.FirstError = err.Error()
	}
}

// openBoth opens side A's session and side B's; when either fails it
// records why, closes the other and returns ok false.
func (pe pairEnv) openBoth(ctx context.Context, res *PairResult, openA, openB func(context.Context) (*session, error)) (a, b *session, ok bool) {
	open := func(f func(context.Context) (*session, error), side string) *session {
		octx, cancel := context.WithTimeout(ctx, pe.cfg.CallTimeout)
		defer cancel()
		s, err := f(octx)
		if err != nil {
			res.fail(fmt.Errorf("%s: open: %w", side, err))
		}
		return s
	}
	a, b = open(openA, res.A), open(openB, res.B)
	if a != nil && b != nil {
		return a, b, true
	}
	for _, s := range []*session{a, b} {
		if s != nil {
			_ = s.Close()
		}
	}
	return nil, nil, false
}

// measure runs the pair on two open sessions with the trivial tool (named
// toolB on side B) and closes them.
func (pe pairEnv) measure(ctx context.Context, res *PairResult, a, b *session, toolB string) {
	defer a.Close()
	defer b.Close()
	tb := pe.cfg.Trivial
	tb.Name = toolB
	measurePair(ctx, res, pairSide{a, pe.cfg.Trivial}, pairSide{b, tb}, pe.cfg.Warmup, pe.cfg.Duration, pe.cfg.CallTimeout)
}

// pairTable renders the pairs that ran as a table of their own: each
// way's p50 and what B adds over A. Empty when none ran.
func pairTable(r *Run) string {
	var rows [][]string
	var census []string
	for _, p := range r.Pairs {
		if p.Skipped != "" || p.Calls == 0 {
			continue
		}
		d := math.Round(float64(p.BLatency.P50-p.ALatency.P50) / float64(time.Microsecond))
		added := thousands(int64(d))
		if d >= 0 {
			added = "+" + added
		}
		rows = append(rows, []string{p.Name, p.Tool, p.A, fmtMicros0(p.ALatency.P50), p.B, fmtMicros0(p.BLatency.P50),
			added, ratio(float64(p.BLatency.P50), float64(p.ALatency.P50)), thousands(int64(p.Calls))})
		if p.ClientWork > 0 {
			census = append(census, fmt.Sprintf("- %s: of B's p50, %s µs is the client's own work per request (p50)", p.Name, fmtMicros(p.ClientWork)))
		}
		if c := p.SecondClient; c != nil {
			census = append(census, fmt.Sprintf("- %s: the daemon's processes: %d before any MCP 2026-07-28 client, %d after a first client's first call, %d after a second client's (each through a shim of its own): the second started %d",
				p.Name, c.Before, c.First, c.Second, c.Second-c.First))
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nPaired calls: one call of each way in turn, one at a time, same run:\n\n")
	writeMarkdown(&b, []string{"pair", "tool", "A", "A p50 (µs)", "B", "B p50 (µs)", "B − A p50 (µs)", "B / A", "calls each"}, rows)
	if len(census) > 0 {
		b.WriteString("\n" + strings.Join(census, "\n") + "\n")
	}
	return b.String()
}
