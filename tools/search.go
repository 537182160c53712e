package tools

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// searchCap caps a search's matches, so that one broad search cannot flood
// the client's context; the answer notes the true total, so the client
// knows to narrow it.
const searchCap = 200

// searchToolset finds where things are used and defined.
func searchToolset() *Toolset {
	return &Toolset{
		Name:        "search",
		Description: "Find references to a table or column, text in definitions, and columns by name.",
		Tools: dbTools([]Tool{
			{
				Name: "find_references_to",
				Description: "What references a table (or one of its columns): foreign keys, and views, triggers and routines whose source names it. " +
					"Source matches are by whole word, case-insensitive.",
				Params: []Param{tableParam, {Name: "column", Type: String, Description: "Only references to this column."}, schemaParam},
				Safe:   true, ReadOnly: true,
				Handler: findReferencesTo,
			},
			{
				Name:        "search_definitions",
				Description: fmt.Sprintf("Views, triggers and routines whose source contains a substring (case-insensitive), capped at %d with the true total.", searchCap),
				Params:      []Param{{Name: "text", Type: String, Required: true, Description: "The substring to look for."}},
				Safe:        true, ReadOnly: true,
				Handler: searchDefinitions,
			},
			{
				Name:        "find_columns",
				Description: "Columns of every table and view whose name matches a pattern: SQL LIKE wildcards (% and _), case-insensitive; without a wildcard, a substring.",
				Params:      []Param{{Name: "pattern", Type: String, Required: true, Description: "A LIKE pattern such as %_id, or a substring."}},
				Safe:        true, ReadOnly: true,
				Handler: findColumns,
			},
		}),
	}
}

// reference is one thing that references a table.
type reference struct {
	Kind   string `json:"kind"` // foreignKey, view, trigger, function, procedure
	Schema string `json:"schema"`
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

func wordPattern(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_$])"?` + regexp.QuoteMeta(name) + `"?($|[^A-Za-z0-9_$])`)
}

func findReferencesTo(ctx context.Context, env *Env, a Args) (*Result, error) {
	column := a.String("column")
	var refs []reference
	var table *db.Table
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) error {
		var err error
		if table, err = cat.Table(ctx, q, a.String("schema"), a.String("table")); err != nil {
			return err
		}
		if column != "" && !slices.ContainsFunc(table.Columns, func(c db.Column) bool { return strings.EqualFold(c.Name, column) }) {
			return Errorf(KindNotFound, "table %s.%s has no column %q; describe_table lists its columns", table.Schema, table.Name, column)
		}
		children, err := cat.Children(ctx, q, table.Schema, table.Name)
		if err != nil {
			return err
		}
		for _, fk := range children {
			if column != "" && !slices.ContainsFunc(fk.ParentColumns, func(c string) bool { return strings.EqualFold(c, column) }) {
				continue
			}
			refs = append(refs, reference{Kind: "foreignKey", Schema: fk.Schema, Name: fk.Table,
				Detail: fmt.Sprintf("%s (%s) -> %s (%s)", fk.Table, strings.Join(fk.Columns, ", "), fk.ParentTable, strings.Join(fk.ParentColumns, ", "))})
		}
		// Only the sources that hold the name at all, each cut at
		// db.MaxSourceChars: a cut source whose kept part does not name it
		// by whole word is reported as a possible reference rather than
		// missed.
		defs, err := cat.Definitions(ctx, q, db.DefinitionFilter{Contains: table.Name})
		if err != nil {
			return err
		}
		tw, cw := wordPattern(table.Name), wordPattern(column)
		for _, d := range defs {
			if d.Schema == table.Schema && d.Name == table.Name {
				continue
			}
			cut := d.Truncated()
			if !tw.MatchString(d.Source) && !(d.Type == "trigger" && strings.EqualFold(d.Table, table.Name)) && !cut {
				continue
			}
			if column != "" && !cw.MatchString(d.Source) && !cut {
				continue
			}
			detail := d.Type + " source names " + table.Name
			switch {
			case d.Table != "":
				detail = "trigger on " + d.Table
			case cut:
				detail = fmt.Sprintf("%s source (%d characters, longer than the %d read) contains %s", d.Type, d.Length, db.MaxSourceChars, table.Name)
			}
			refs = append(refs, reference{Kind: d.Type, Schema: d.Schema, Name: d.Name, Detail: detail})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	shown, note := capList(refs, searchCap)
	target := table.Schema + "." + table.Name
	if column != "" {
		target += "." + column
	}
	ls := []string{fmt.Sprintf("references to %s %s:", target, note)}
	for _, r := range shown {
		ls = append(ls, fmt.Sprintf("  %s %s.%s: %s", r.Kind, r.Schema, r.Name, r.Detail))
	}
	if shown == nil {
		shown = []reference{}
	}
	return &Result{Text: lines(ls), Structured: map[string]any{"references": shown, "total": len(refs)}}, nil
}

func searchDefinitions(ctx context.Context, env *Env, a Args) (*Result, error) {
	text := a.String("text")
	if text == "" {
		return nil, Errorf(KindInvalidParams, "argument \"text\" is empty")
	}
	var found []db.Definition
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) error {
		var err error
		found, err = cat.Definitions(ctx, q, db.DefinitionFilter{Contains: text})
		return err
	})
	if err != nil {
		return nil, err
	}
	shown, note := capList(found, searchCap)
	ls := []string{fmt.Sprintf("definitions containing %q %s:", text, note)}
	type match struct {
		Schema string `json:"schema"`
		Name   string `json:"name"`
		Type   string `json:"type"`
		Line   string `json:"line"`
	}
	matches := []match{}
	for _, d := range shown {
		m := match{Schema: d.Schema, Name: d.Name, Type: d.Type, Line: matchingLine(d.Excerpt, text)}
		matches = append(matches, m)
		ls = append(ls, fmt.Sprintf("  %s %s.%s: %s", m.Type, m.Schema, m.Name, m.Line))
	}
	return &Result{Text: lines(ls), Structured: map[string]any{"matches": matches, "total": len(found)}}, nil
}

// matchingLine returns the first line of src (a definition's excerpt)
// containing text, trimmed.
func matchingLine(src, text string) string {
	for l := range strings.SplitSeq(src, "\n") {
		if strings.Contains(strings.ToLower(l), strings.ToLower(text)) {
			l = strings.TrimSpace(l)
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return ""
}

// likePattern compiles an SQL LIKE pattern (case-insensitive); without a
// wildcard it matches a substring.
func likePattern(p string) *regexp.Regexp {
	if !strings.ContainsAny(p, "%_") {
		return regexp.MustCompile("(?i)" + regexp.QuoteMeta(p))
	}
	var b strings.Builder
	b.WriteString("(?is)^")
	for _, r := range p {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func findColumns(ctx context.Context, env *Env, a Args) (*Result, error) {
	pattern := a.String("pattern")
	if pattern == "" {
		return nil, Errorf(KindInvalidParams, "argument \"pattern\" is empty; use %% to match every column")
	}
	re := likePattern(pattern)
	var found []db.ColumnRef
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) error {
		cols, err := cat.Columns(ctx, q)
		for _, c := range cols {
			if re.MatchString(c.Column) {
				found = append(found, c)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	shown, note := capList(found, env.DB.Config().MaxRows)
	ls := []string{fmt.Sprintf("columns matching %q %s:", pattern, note)}
	for _, c := range shown {
		ls = append(ls, fmt.Sprintf("  %s.%s.%s %s", c.Schema, c.Table, c.Column, c.Type))
	}
	if shown == nil {
		shown = []db.ColumnRef{}
	}
	return &Result{Text: lines(ls), Structured: map[string]any{"columns": shown, "total": len(found)}}, nil
}
