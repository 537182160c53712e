package install

import (
	"fmt"
	"strings"
)

// Diff renders the change as a unified diff (for --dry-run); "" when the
// file would not change.
func (c *Change) Diff() string {
	if !c.Changed() {
		return ""
	}
	before := "a" + c.Path
	if !c.exists {
		before = "/dev/null"
	}
	return unified(before, "b"+c.Path, string(c.Before), string(c.After))
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// unified is a line diff with three lines of context. The common head and
// tail are cut first, so the quadratic part only sees the changed middle
// (an entry), even in a large ~/.claude.json.
//
// It is written here rather than taken from a library because the Go
// packages that write a unified line diff are unmaintained
// (github.com/pmezard/go-difflib, last released in 2016 and in the module
// graph only as testify's; github.com/hexops/gotextdiff), internal to
// x/tools (golang.org/x/tools/internal/diff), or diff characters rather
// than lines (github.com/sergi/go-diff). The output is only shown to a
// person (install --dry-run), so a dependency would buy nothing this
// hundred lines do not.
func unified(nameA, nameB, a, b string) string {
	la, lb := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(la) && pre < len(lb) && la[pre] == lb[pre] {
		pre++
	}
	suf := 0
	for suf < len(la)-pre && suf < len(lb)-pre && la[len(la)-1-suf] == lb[len(lb)-1-suf] {
		suf++
	}
	ma, mb := la[pre:len(la)-suf], lb[pre:len(lb)-suf]
	// Longest common subsequence of the middles.
	n, m := len(ma), len(mb)
	if n*m > 4_000_000 { // too large to align: show it as replaced
		n, m = 0, 0
	}
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte
		line string
	}
	var ops []op
	for _, l := range la[:pre] {
		ops = append(ops, op{' ', l})
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case ma[i] == mb[j]:
			ops = append(ops, op{' ', ma[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, op{'-', ma[i]})
			i++
		default:
			ops = append(ops, op{'+', mb[j]})
			j++
		}
	}
	for ; i < len(ma); i++ {
		ops = append(ops, op{'-', ma[i]})
	}
	for ; j < len(mb); j++ {
		ops = append(ops, op{'+', mb[j]})
	}
	for _, l := range la[len(la)-suf:] {
		ops = append(ops, op{' ', l})
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	const ctx = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after
		// the last change that is within 2*ctx of the previous one.
		start := max(0, k-ctx)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(len(ops), end+ctx)
				break
			}
			end = run
		}
		aStart, bStart := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		if aLen == 0 { // an empty range names the line before it
			aStart--
		}
		if bLen == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart, aLen, bStart, bLen)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return out.String()
}
