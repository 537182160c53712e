package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Type is the JSON type of a tool argument.
type Type string

// The argument types a tool may declare.
const (
	String  Type = "string"
	Integer Type = "integer"
	Boolean Type = "boolean"
)

// Param declares one argument of a tool. The tool's input schema is built
// from its params and is always closed, so a client learns of a misspelt
// argument instead of having it silently dropped.
type Param struct {
	Name        string
	Type        Type
	Description string
	Required    bool
	Min, Max    int64 // bounds of an Integer, used when Min < Max

	// Header, when set, is the argument's x-mcp-header annotation (MCP
	// 2026-07-28 §Tools, SEP-2243): clients mirror the value into an
	// Mcp-Param-<Header> HTTP header.
	Header string
}

// Handler runs a tool. args has been checked against the tool's params. It
// returns the result, or an error (an *Error to choose the kind).
type Handler func(ctx context.Context, env *Env, args Args) (*Result, error)

// Tool is one tool of a toolset.
type Tool struct {
	Name        string
	Description string
	Params      []Param

	// Safe vouches that the tool cannot change anything, so that it may be
	// offered in a read-only session. The zero value gates the tool
	// (fail-closed): a read-only worker never registers it and the gateway
	// refuses it.
	Safe bool

	// Annotations (MCP 2025-11-25 §Tools, ToolAnnotations); they must be
	// truthful. ReadOnly means the tool does not modify its environment;
	// Destructive that it may delete or overwrite; Idempotent that repeating
	// a call has no further effect.
	ReadOnly, Destructive, Idempotent bool

	// Engines lists the database engines that can run the tool; empty
	// means every engine, and a tool that needs no database.
	Engines []string

	// NeedsDB marks a tool that cannot run without a database.
	NeedsDB bool

	// Handle says how the tool takes a transaction handle in a per-user
	// worker (Options.Transactions); a session worker never offers one.
	Handle HandleUse

	// PerUser registers the tool only in a per-user worker (begin).
	PerUser bool

	// PerUserDescription replaces Description in a per-user worker, where
	// transactions are handles rather than the session's.
	PerUserDescription string

	Handler Handler
}

// HandleUse says whether a tool takes the transaction argument in a
// per-user worker.
type HandleUse int

// How a tool takes a transaction handle.
const (
	HandleAuto     HandleUse = iota // optional when the tool NeedsDB, else none
	HandleOptional                  // optional (status)
	HandleRequired                  // required (commit, abort, refresh)
	HandleNone                      // none (begin)
)

// takesHandle reports whether the tool takes a handle.
func (t *Tool) takesHandle() bool {
	switch t.Handle {
	case HandleOptional, HandleRequired:
		return true
	case HandleAuto:
		return t.NeedsDB
	}
	return false
}

// withHandle returns the tool as a per-user worker serves it: with the
// transaction argument when it takes one.
func (t *Tool) withHandle() *Tool {
	c := *t
	if t.PerUserDescription != "" {
		c.Description = t.PerUserDescription
	}
	if !t.takesHandle() {
		return &c
	}
	p := handleParam
	p.Required = t.Handle == HandleRequired
	c.Params = append(slices.Clip(t.Params), p)
	return &c
}

// Result is a successful tool result: human-readable text (capped by the
// server) and, optionally, structured content for programs.
type Result struct {
	Text       string
	Structured any
}

// InputSchema returns the tool's closed JSON Schema (2020-12).
func (t *Tool) InputSchema() map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range t.Params {
		s := map[string]any{"type": string(p.Type)}
		if p.Description != "" {
			s["description"] = p.Description
		}
		if p.Type == Integer && p.Min < p.Max {
			s["minimum"], s["maximum"] = p.Min, p.Max
		}
		if p.Header != "" {
			s["x-mcp-header"] = p.Header
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// Args are a tool call's checked arguments.
type Args struct {
	vals map[string]any
}

// Has reports whether the argument was given.
func (a Args) Has(name string) bool {
	_, ok := a.vals[name]
	return ok
}

// String returns a string argument, or "" when absent.
func (a Args) String(name string) string {
	s, _ := a.vals[name].(string)
	return s
}

// Int returns an integer argument, or def when absent.
func (a Args) Int(name string, def int64) int64 {
	if n, ok := a.vals[name].(int64); ok {
		return n
	}
	return def
}

// Bool returns a boolean argument, or def when absent.
func (a Args) Bool(name string, def bool) bool {
	if b, ok := a.vals[name].(bool); ok {
		return b
	}
	return def
}

// checkArgs checks raw call arguments against the tool's params. The errors
// name the argument and say what the tool takes, so a model can self-correct
// (MCP 2025-11-25 §Tools, error handling: input validation errors are tool
// execution errors, not protocol errors).
func (t *Tool) checkArgs(raw json.RawMessage) (Args, error) {
	args := Args{vals: map[string]any{}}
	in := map[string]any{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil || in == nil {
			return args, Errorf(KindInvalidParams, "arguments must be a JSON object; %s", t.takes())
		}
	}
	unknown := []string{}
	for name := range in {
		if !slices.ContainsFunc(t.Params, func(p Param) bool { return p.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return args, Errorf(KindInvalidParams, "unknown argument %q; %s", unknown[0], t.takes())
	}
	for _, p := range t.Params {
		v, ok := in[p.Name]
		if !ok || v == nil {
			if p.Required {
				return args, Errorf(KindInvalidParams, "missing required argument %q (%s); %s", p.Name, p.Type, t.takes())
			}
			continue
		}
		got, err := p.convert(v)
		if err != nil {
			return args, err
		}
		args.vals[p.Name] = got
	}
	return args, nil
}

func (p Param) convert(v any) (any, error) {
	switch p.Type {
	case String:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case Integer:
		if n, ok := v.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				f, ferr := n.Float64()
				if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
					break
				}
				i = int64(f)
			}
			if p.Min < p.Max && (i < p.Min || i > p.Max) {
				return nil, Errorf(KindInvalidParams, "argument %q must be between %d and %d, got %d", p.Name, p.Min, p.Max, i)
			}
			return i, nil
		}
	}
	return nil, Errorf(KindInvalidParams, "argument %q must be %s %s", p.Name, article(p.Type), p.Type)
}

func article(t Type) string {
	if t == Integer {
		return "an"
	}
	return "a"
}

// takes describes the tool's arguments for an error message.
func (t *Tool) takes() string {
	if len(t.Params) == 0 {
		return t.Name + " takes no arguments"
	}
	parts := make([]string, 0, len(t.Params))
	for _, p := range t.Params {
		s := p.Name + " (" + string(p.Type)
		if !p.Required {
			s += ", optional"
		}
		parts = append(parts, s+")")
	}
	return fmt.Sprintf("%s takes %s", t.Name, strings.Join(parts, ", "))
}
