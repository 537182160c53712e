package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// checkPrefix names a check: a view whose rows are violations (zero rows =
// pass), a test that lives in the database itself and runs as any session.
const checkPrefix = "check_"

// sampleRows is how many offending rows a failure shows.
const sampleRows = 20

// testingToolset runs checks.
func testingToolset() *Toolset {
	checkParam := Param{Name: "check", Type: String, Required: true, Description: "The check view's name (check_…)."}
	schemaAll := Param{Name: "schema", Type: String, Description: "Only this schema's checks; default: every schema."}
	return &Toolset{
		Name:        "testing",
		Description: "Checks: views named check_* whose rows are violations; zero rows means the check passes.",
		Tools: dbTools([]Tool{
			{Name: "list_checks", Description: "List the checks (views named check_*).", Params: []Param{schemaAll}, Safe: true, ReadOnly: true, Handler: listChecks},
			{Name: "run_checks", Description: "Run every check: a summary and the failures with their violation counts.", Params: []Param{schemaAll}, Safe: true, ReadOnly: true, Handler: runChecks},
			{Name: "run_check", Description: "Run one check: pass or fail, the violation count and a sample of the offending rows.", Params: []Param{checkParam, schemaParam}, Safe: true, ReadOnly: true, Handler: runCheck},
			{Name: "list_failing_checks", Description: "The names of the checks that fail (or cannot run).", Params: []Param{schemaAll}, Safe: true, ReadOnly: true, Handler: listFailingChecks},
			{Name: "describe_check_failure", Description: "Why a check fails: the view's SQL and a sample of the offending rows.", Params: []Param{checkParam, schemaParam, limitParam}, Safe: true, ReadOnly: true, Handler: describeCheckFailure},
		}),
	}
}

func isCheck(o db.Object) bool {
	return o.Type == "view" && strings.HasPrefix(strings.ToLower(o.Name), checkPrefix)
}

func checks(ctx context.Context, env *Env, a Args) ([]db.Object, error) {
	schema := a.String("schema")
	if schema == "" {
		schema = "*"
	}
	return objects(ctx, env, schema, isCheck)
}

func listChecks(ctx context.Context, env *Env, a Args) (*Result, error) {
	cs, err := checks(ctx, env, a)
	if err != nil {
		return nil, err
	}
	ls := make([]string, 0, len(cs)+1)
	for _, c := range cs {
		ls = append(ls, c.Schema+"."+c.Name)
	}
	ls = append(ls, fmt.Sprintf("(%d checks)", len(cs)))
	return &Result{Text: lines(ls), Structured: map[string]any{"checks": cs}}, nil
}

// outcome is one check's result.
type outcome struct {
	Schema     string   `json:"schema"`
	Check      string   `json:"check"`
	Status     string   `json:"status"` // pass, fail, error
	Violations int      `json:"violations"`
	Error      string   `json:"error,omitempty"`
	Sample     *db.Rows `json:"sample,omitempty"`
	kind       Kind     // of Error
}

// run runs one check in its own savepoint, so a broken check does not stop
// the others.
func run(ctx context.Context, env *Env, schema, name string, sample int) outcome {
	o := outcome{Schema: schema, Check: name}
	err := read(ctx, env, func(ctx context.Context, q db.Querier, _ db.Catalog) error {
		r, err := q.QueryContext(ctx, "SELECT * FROM "+db.Qualify(schema, name))
		if err != nil {
			return err
		}
		rows, err := db.Collect(r, max(sample, 0), db.DefaultMaxCell)
		if err != nil {
			return err
		}
		if rows.RowTooLarge {
			// Rows past it are unread: the check neither passes nor fails.
			return &db.Error{Kind: db.KindOther, Code: "rowTooLarge", Err: db.ErrRowTooLarge,
				Message: fmt.Sprintf("a row of the check is over the %d MiB row bound, so whether the check holds is unknown; make it select fewer or shorter columns", db.MaxRowBytes>>20)}
		}
		o.Violations = rows.Total
		if sample > 0 {
			o.Sample = rows
		}
		return nil
	})
	switch {
	case err != nil:
		te := AsError(err)
		o.Status, o.Error, o.kind = "error", te.Message, te.Kind
	case o.Violations == 0:
		o.Status = "pass"
	default:
		o.Status = "fail"
	}
	return o
}

// runAll runs every check, within the worker's bound on one run of them
// all (db.Config.ChecksTimeout): the check running when it passes is
// stopped, and the checks not reached are reported as not run.
func runAll(ctx context.Context, env *Env, a Args) ([]outcome, error) {
	cs, err := checks(ctx, env, a)
	if err != nil {
		return nil, err
	}
	bound := env.DB.Config().ChecksTimeout
	bctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	out := make([]outcome, 0, len(cs))
	for _, c := range cs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if bctx.Err() != nil {
			out = append(out, outcome{Schema: c.Schema, Check: c.Name, Status: "error", kind: KindOther,
				Error: fmt.Sprintf("not run: the checks' time bound (%v, the operator's database.checks_timeout) passed first; run it with run_check", bound)})
			continue
		}
		o := run(bctx, env, c.Schema, c.Name, 0)
		if o.Status == "error" && bctx.Err() != nil && ctx.Err() == nil {
			o.Error = fmt.Sprintf("stopped: the checks' time bound (%v, the operator's database.checks_timeout) passed while it ran; run it with run_check", bound)
		}
		out = append(out, o)
	}
	return out, nil
}

func runChecks(ctx context.Context, env *Env, a Args) (*Result, error) {
	outs, err := runAll(ctx, env, a)
	if err != nil {
		return nil, err
	}
	pass, fail, broken := 0, 0, 0
	var ls []string
	failures := []outcome{}
	for _, o := range outs {
		switch o.Status {
		case "pass":
			pass++
			continue
		case "fail":
			fail++
			ls = append(ls, fmt.Sprintf("  FAIL %s.%s: %d violation(s)", o.Schema, o.Check, o.Violations))
		default:
			broken++
			ls = append(ls, fmt.Sprintf("  ERROR %s.%s: %s", o.Schema, o.Check, o.Error))
		}
		failures = append(failures, o)
	}
	summary := fmt.Sprintf("%d checks: %d passed, %d failed, %d could not run", len(outs), pass, fail, broken)
	return &Result{
		Text:       lines(append([]string{summary}, ls...)),
		Structured: map[string]any{"total": len(outs), "passed": pass, "failed": fail, "errors": broken, "failures": failures},
	}, nil
}

func listFailingChecks(ctx context.Context, env *Env, a Args) (*Result, error) {
	outs, err := runAll(ctx, env, a)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, o := range outs {
		if o.Status != "pass" {
			names = append(names, o.Schema+"."+o.Check)
		}
	}
	return &Result{Text: lines(append(names, fmt.Sprintf("(%d of %d checks fail)", len(names), len(outs)))), Structured: map[string]any{"failing": names, "total": len(outs)}}, nil
}

// findCheck resolves a check by name in schema ("" for the default).
func findCheck(ctx context.Context, env *Env, a Args) (db.Definition, error) {
	name := a.String("check")
	if !strings.HasPrefix(strings.ToLower(name), checkPrefix) {
		return db.Definition{}, Errorf(KindInvalidParams, "a check is a view named %s…, and %q is not; list_checks shows them", checkPrefix, name)
	}
	defs, err := definition(ctx, env, "view", a.String("schema"), name)
	if err != nil {
		return db.Definition{}, err
	}
	return defs[0], nil
}

func runCheck(ctx context.Context, env *Env, a Args) (*Result, error) {
	d, err := findCheck(ctx, env, a)
	if err != nil {
		return nil, err
	}
	o := run(ctx, env, d.Schema, d.Name, sampleRows)
	if o.Status == "error" {
		return nil, Errorf(o.kind, "check %s.%s cannot run: %s", d.Schema, d.Name, o.Error)
	}
	text := fmt.Sprintf("%s %s.%s: %d violation(s)", strings.ToUpper(o.Status), d.Schema, d.Name, o.Violations)
	if o.Violations > 0 {
		text += "\n" + o.Sample.Text()
	}
	return &Result{Text: text, Structured: o}, nil
}

func describeCheckFailure(ctx context.Context, env *Env, a Args) (*Result, error) {
	d, err := findCheck(ctx, env, a)
	if err != nil {
		return nil, err
	}
	o := run(ctx, env, d.Schema, d.Name, rowLimit(env, a))
	if o.Status == "error" {
		return nil, Errorf(o.kind, "check %s.%s cannot run: %s\n%s", d.Schema, d.Name, o.Error, sourceText(d))
	}
	text := fmt.Sprintf("%s %s.%s: %d violation(s)\n\n%s", strings.ToUpper(o.Status), d.Schema, d.Name, o.Violations, sourceText(d))
	if o.Violations > 0 {
		text += "\n\noffending rows:\n" + o.Sample.Text()
	}
	return &Result{Text: text, Structured: map[string]any{"check": o, "definition": d.Source}}, nil
}
