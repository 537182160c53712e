package tools

import (
	"fmt"
	"slices"
	"strings"
)

// Toolset is a named family of tools that a deployment switches on or off as
// a whole. It vouches, tool by tool (Tool.Safe), for which of its tools are
// safe in a read-only session; the default is none.
type Toolset struct {
	Name        string
	Description string
	Tools       []Tool
}

// SafeToolNames returns the names of the toolset's read-only-safe tools.
func (ts *Toolset) SafeToolNames() []string {
	var names []string
	for _, t := range ts.Tools {
		if t.Safe {
			names = append(names, t.Name)
		}
	}
	return names
}

// ToolNames returns the names of every tool of the toolset.
func (ts *Toolset) ToolNames() []string {
	names := make([]string, 0, len(ts.Tools))
	for _, t := range ts.Tools {
		names = append(names, t.Name)
	}
	return names
}

// builtin returns the built-in toolsets in their documented order. They are
// plain values: listing them needs no database, so the gateway can ask for
// the safe set without starting a worker.
func builtin() []*Toolset {
	return []*Toolset{
		sessionToolset(), executionToolset(), listingToolset(), browsingToolset(),
		searchToolset(), mutationToolset(), testingToolset(),
	}
}

// Builtin returns the names of the built-in toolsets, the default selection.
func Builtin() []string {
	var names []string
	for _, ts := range builtin() {
		names = append(names, ts.Name)
	}
	return names
}

// Lookup returns the built-in toolsets with the given names, in the given
// order; no names means every built-in toolset. An unknown name is an error
// that lists the known ones.
func Lookup(names []string) ([]*Toolset, error) {
	all := builtin()
	if len(names) == 0 {
		return all, nil
	}
	var out []*Toolset
	for _, name := range names {
		i := slices.IndexFunc(all, func(ts *Toolset) bool { return ts.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("tools: unknown toolset %q (built-in toolsets: %s)", name, strings.Join(Builtin(), ", "))
		}
		if !slices.Contains(out, all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// SafeToolNames returns the sorted names of the read-only-safe tools of the
// named toolsets (no names: every built-in toolset), for the gateway's
// read-only filter. It needs no database.
func SafeToolNames(toolsets []string) ([]string, error) {
	return toolNames(toolsets, func(t *Tool) bool { return t.Safe })
}

// ToolNames returns the sorted names of every tool of the named toolsets
// (no names: every built-in toolset), for policies that grant toolsets
// and the metrics' tool labels.
func ToolNames(toolsets []string) ([]string, error) {
	return toolNames(toolsets, func(*Tool) bool { return true })
}

// OnlySafe reports whether every tool in names that the toolsets hold is
// read-only-safe: a worker limited to names may run no writing tool, so its
// database opens read-only. Names the toolsets do not hold count as safe:
// such a worker never registers them.
func OnlySafe(toolsets, names []string) (bool, error) {
	safe, err := SafeToolNames(toolsets)
	if err != nil {
		return false, err
	}
	all, _ := ToolNames(toolsets)
	for _, n := range names {
		if slices.Contains(all, n) && !slices.Contains(safe, n) {
			return false, nil
		}
	}
	return true, nil
}

// UndoToolNames returns the sorted names of the safe tools that still change
// the session they run in (Safe, but not annotated ReadOnly): abort, which
// discards a read-write session's uncommitted work. The gateway refuses them
// to a read-only token on a read-write session (gateway.Options.UndoTools).
func UndoToolNames(toolsets []string) ([]string, error) {
	return toolNames(toolsets, func(t *Tool) bool { return t.Safe && !t.ReadOnly })
}

func toolNames(toolsets []string, keep func(*Tool) bool) ([]string, error) {
	sets, err := Lookup(toolsets)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ts := range sets {
		for i := range ts.Tools {
			if keep(&ts.Tools[i]) {
				names = append(names, ts.Tools[i].Name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
