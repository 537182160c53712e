package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fmtDur prints a latency in the unit a reader compares at a glance: µs
// below 10 ms, ms above. Zero (nothing measured) is "—".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < 10*time.Millisecond:
		return fmtMicros(d) + " µs"
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// fmtMicros prints d in whole microseconds with thousands separators, or
// with one decimal below 10 µs.
func fmtMicros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	if us < 10 {
		return strconv.FormatFloat(us, 'f', 1, 64)
	}
	return thousands(int64(us + 0.5))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// ratio prints a/b as "2.5×"; "—" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	r := a / b
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

// withRatio prints "value (ratio)" unless this is the base column.
func withRatio(value string, a, base float64, isBase bool) string {
	if value == "—" || isBase || base <= 0 {
		return value
	}
	return value + " (" + ratio(a, base) + ")"
}

// Table renders the run as one markdown table: a row per figure, a column
// per system that ran. Ratios in parentheses are against the floor, measured
// in the same run; rows marked "vs" compare two peers.
func Table(r *Run) string {
	var cols []*SystemResult
	for i := range r.Systems {
		// The stateless-only system has a column in the 2026-07-28 table only.
		if r.Systems[i].Skipped == "" && r.Config.kind(r.Systems[i].Name) != sysSDKStateless {
			cols = append(cols, &r.Systems[i])
		}
	}
	floor := r.system(sysFloor)
	sdk := r.system(sysSDK)
	sg := r.system(sysSupergateway)
	var rows [][]string
	add := func(label string, cell func(s *SystemResult) string) {
		row := []string{label}
		for _, s := range cols {
			row = append(row, cell(s))
		}
		rows = append(rows, row)
	}

	tools := []Tool{r.Config.Trivial}
	if r.Config.Realistic != nil {
		tools = append(tools, *r.Config.Realistic)
	}
	conc := r.Config.Concurrency
	top := 0
	if len(conc) > 0 {
		top = conc[len(conc)-1]
	}
	for _, tool := range tools {
		tl := tool.Name
		for i, n := range conc {
			pct := func(get func(Summary) time.Duration) func(s *SystemResult) string {
				return func(s *SystemResult) string {
					lr := s.load(tool.Label, n)
					if lr == nil {
						return "—"
					}
					var base float64
					if floor != nil {
						if fl := floor.load(tool.Label, n); fl != nil {
							base = float64(get(fl.Latency))
						}
					}
					v := get(lr.Latency)
					return withRatio(fmtMicros0(v), float64(v), base, s == floor)
				}
			}
			add(fmt.Sprintf("%s p50 @%d (µs)", tl, n), pct(func(s Summary) time.Duration { return s.P50 }))
			if i == 0 {
				add(fmt.Sprintf("%s added p50 @%d over floor (µs)", tl, n), func(s *SystemResult) string {
					lr, fl := s.load(tool.Label, n), (*LoadResult)(nil)
					if floor != nil {
						fl = floor.load(tool.Label, n)
					}
					if s == floor || lr == nil || fl == nil || lr.Latency.Count == 0 || fl.Latency.Count == 0 {
						return "—"
					}
					d := (lr.Latency.P50 - fl.Latency.P50 + time.Microsecond/2) / time.Microsecond
					if d >= 0 {
						return "+" + thousands(int64(d))
					}
					return thousands(int64(d))
				})
			}
			add(fmt.Sprintf("%s p99 @%d (µs)", tl, n), pct(func(s Summary) time.Duration { return s.P99 }))
		}
		for _, n := range []int{conc[0], top} {
			add(fmt.Sprintf("%s server CPU per call @%d (µs)", tl, n), func(s *SystemResult) string {
				lr := s.load(tool.Label, n)
				if lr == nil || lr.ServerCPU <= 0 {
					return "—"
				}
				var base float64
				if floor != nil {
					if fl := floor.load(tool.Label, n); fl != nil {
						base = float64(fl.ServerCPU)
					}
				}
				return withRatio(fmtMicros(lr.ServerCPU), float64(lr.ServerCPU), base, s == floor)
			})
			if n == top {
				break
			}
		}
		if top > 0 {
			add(fmt.Sprintf("%s harness CPU per call @%d (µs)", tl, top), func(s *SystemResult) string {
				lr := s.load(tool.Label, top)
				if lr == nil || lr.ClientCPU <= 0 {
					return "—"
				}
				return fmtMicros(lr.ClientCPU)
			})
		}
		if top > 0 {
			cps := func(s *SystemResult) float64 {
				if s == nil {
					return 0
				}
				if lr := s.load(tool.Label, top); lr != nil {
					return lr.CallsPerSec
				}
				return 0
			}
			add(fmt.Sprintf("%s calls/s @%d", tl, top), func(s *SystemResult) string {
				v := cps(s)
				if v <= 0 {
					return "—"
				}
				return withRatio(thousands(int64(v+0.5)), v, cps(floor), s == floor)
			})
			for _, peer := range []*SystemResult{sdk, sg} {
				if peer == nil || peer.Skipped != "" || cps(peer) <= 0 {
					continue
				}
				add(fmt.Sprintf("%s calls/s @%d vs %s", tl, top, peer.Name), func(s *SystemResult) string {
					if s == peer {
						return "1×"
					}
					return ratio(cps(s), cps(peer))
				})
			}
		}
	}
	startP := func(get func(Summary) time.Duration) func(s *SystemResult) string {
		return func(s *SystemResult) string {
			if s.Start == nil || s.Start.Latency.Count == 0 {
				return "—"
			}
			var base float64
			if floor != nil && floor.Start != nil {
				base = float64(get(floor.Start.Latency))
			}
			v := get(s.Start.Latency)
			return withRatio(fmt.Sprintf("%.2f", float64(v)/float64(time.Millisecond)), float64(v), base, s == floor)
		}
	}
	add("session start p50 (ms)", startP(func(s Summary) time.Duration { return s.P50 }))
	add("session start p99 (ms)", startP(func(s Summary) time.Duration { return s.P99 }))
	add(fmt.Sprintf("idle session RSS (MiB, of %d)", r.Config.Idle), func(s *SystemResult) string {
		if s.Idle == nil || s.Idle.Opened == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", mib(s.Idle.PerSessionRSS))
	})
	add("idle session PSS (MiB)", func(s *SystemResult) string {
		if s.Idle == nil || s.Idle.Opened == 0 || s.Idle.After.PSS == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", mib(s.Idle.PerSessionPSS))
	})
	held := func(f func(h *HoldResult) string) func(s *SystemResult) string {
		return func(s *SystemResult) string {
			if s.Hold == nil {
				return "—"
			}
			return f(s.Hold)
		}
	}
	n := r.Config.Hold
	add(fmt.Sprintf("%d sessions held: answered", n), held(func(h *HoldResult) string {
		return fmt.Sprintf("%d/%d", h.Answered, h.Sessions)
	}))
	add(fmt.Sprintf("%d sessions held: RSS / PSS (MiB)", n), held(func(h *HoldResult) string {
		return fmt.Sprintf("%.0f / %.0f", mib(h.Memory.RSS), mib(h.Memory.PSS))
	}))
	add(fmt.Sprintf("%d sessions held: idle CPU (cores)", n), held(func(h *HoldResult) string {
		return fmt.Sprintf("%.2f", h.IdleCPU)
	}))
	add(fmt.Sprintf("%d sessions held: call p50 (µs)", n), held(func(h *HoldResult) string {
		return fmtMicros0(h.Call.P50)
	}))

	var b strings.Builder
	header := []string{"figure"}
	for _, s := range cols {
		header = append(header, s.Name)
	}
	writeMarkdown(&b, header, rows)
	b.WriteString(modernTable(r, tools))
	b.WriteString(tableNotes(r))
	return b.String()
}

// modernTable renders the stateless phase (MCP 2026-07-28) as a table of
// its own, a column per system it ran on; ratios are against the go-sdk
// server in its stateless mode, measured in the same run. Empty when the
// phase did not run.
func modernTable(r *Run, tools []Tool) string {
	var cols []*SystemResult
	for i := range r.Systems {
		if len(r.Systems[i].Modern) > 0 {
			cols = append(cols, &r.Systems[i])
		}
	}
	if len(cols) == 0 {
		return ""
	}
	base := r.system(sysSDKStateless)
	var rows [][]string
	add := func(label string, cell func(s *SystemResult) string) {
		row := []string{label}
		for _, s := range cols {
			row = append(row, cell(s))
		}
		rows = append(rows, row)
	}
	n := r.Config.ModernClients
	users := func(u int) string {
		if u == 1 {
			return "1 user"
		}
		return fmt.Sprintf("%d users", u)
	}
	for _, tool := range tools {
		for _, u := range r.Config.ModernUsers {
			fig := func(get func(m *ModernResult) float64, format func(float64) string) func(s *SystemResult) string {
				return func(s *SystemResult) string {
					m := s.modern(tool.Label, u)
					if m == nil || m.Latency.Count == 0 {
						return "—"
					}
					var b float64
					if base != nil {
						if bm := base.modern(tool.Label, u); bm != nil && bm.Latency.Count > 0 {
							b = get(bm)
						}
					}
					v := get(m)
					return withRatio(format(v), v, b, s == base)
				}
			}
			add(fmt.Sprintf("%s p50 @%d, %s (µs)", tool.Name, n, users(u)), fig(
				func(m *ModernResult) float64 { return float64(m.Latency.P50) },
				func(v float64) string { return fmtMicros0(time.Duration(v)) }))
			add(fmt.Sprintf("%s calls/s @%d, %s", tool.Name, n, users(u)), fig(
				func(m *ModernResult) float64 { return m.CallsPerSec },
				func(v float64) string { return thousands(int64(v + 0.5)) }))
		}
	}
	// Per-user workers, after the first tool's loops.
	for _, u := range r.Config.ModernUsers {
		census := func(f func(c *WorkerCensus) string) func(s *SystemResult) string {
			return func(s *SystemResult) string {
				m := s.modern(tools[0].Label, u)
				if m == nil || m.Workers == nil {
					return "—"
				}
				return f(m.Workers)
			}
		}
		add(fmt.Sprintf("per-user worker processes, %s", users(u)), census(func(c *WorkerCensus) string {
			return strconv.Itoa(c.Workers)
		}))
		add(fmt.Sprintf("worker RSS / PSS per active user, %s (MiB)", users(u)), census(func(c *WorkerCensus) string {
			if c.Users == 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f / %.2f", mib(c.PerUserRSS), mib(c.PerUserPSS))
		}))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nMCP 2026-07-28, %d stateless clients (no session; the go-sdk client at its defaults):\n\n", n)
	header := []string{"figure"}
	for _, s := range cols {
		header = append(header, s.Name)
	}
	writeMarkdown(&b, header, rows)
	return b.String()
}

// fmtMicros0 is fmtMicros with "—" for nothing measured.
func fmtMicros0(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmtMicros(d)
}

// writeMarkdown writes a markdown table whose columns are padded to line up
// in a terminal too. Widths count runes, so "µ" and "×" do not skew them.
func writeMarkdown(b *strings.Builder, header []string, rows [][]string) {
	width := make([]int, len(header))
	for _, row := range append([][]string{header}, rows...) {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(row []string) {
		b.WriteString("|")
		for i, c := range row {
			pad := width[i] - len([]rune(c))
			if i == 0 {
				fmt.Fprintf(b, " %s%s |", c, strings.Repeat(" ", pad))
			} else {
				fmt.Fprintf(b, " %s%s |", strings.Repeat(" ", pad), c)
			}
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|")
	for i, w := range width {
		if i == 0 {
			b.WriteString(" " + strings.Repeat("-", w) + " |")
		} else {
			b.WriteString(" " + strings.Repeat("-", w-1) + ": |")
		}
	}
	b.WriteString("\n")
	for _, row := range rows {
		line(row)
	}
}

// tableNotes lists skipped systems and errors, so a missing cell always has
// its reason next to the table.
func tableNotes(r *Run) string {
	var notes []string
	for _, s := range r.Systems {
		if s.Skipped != "" {
			notes = append(notes, fmt.Sprintf("%s: skipped — %s", s.Name, s.Skipped))
			continue
		}
		if s.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", s.Name, s.Error))
		}
		if s.Idle != nil && s.Idle.FirstError != "" {
			notes = append(notes, fmt.Sprintf("%s: idle: %d of %d opened; first error: %s", s.Name, s.Idle.Opened, s.Idle.Sessions, s.Idle.FirstError))
		}
		if s.Start != nil && s.Start.Errors > 0 {
			notes = append(notes, fmt.Sprintf("%s: session start: %d errors; first: %s", s.Name, s.Start.Errors, s.Start.FirstError))
		}
		for _, l := range s.Load {
			if l.Errors > 0 {
				notes = append(notes, fmt.Sprintf("%s: %s @%d: %d errors; first: %s", s.Name, l.Tool, l.Sessions, l.Errors, l.FirstError))
			}
		}
		if s.Hold != nil && s.Hold.FirstError != "" {
			notes = append(notes, fmt.Sprintf("%s: hold: first error: %s", s.Name, s.Hold.FirstError))
		}
		for _, m := range s.Modern {
			if m.Errors > 0 || m.FirstError != "" {
				notes = append(notes, fmt.Sprintf("%s: 2026-07-28 %s @%d, %d users: %d errors; first: %s", s.Name, m.Tool, m.Sessions, m.Users, m.Errors, m.FirstError))
			}
		}
		if s.ModernUsers > 0 && r.Config.ModernClients > 0 {
			for _, u := range r.Config.ModernUsers {
				if u > s.ModernUsers {
					notes = append(notes, fmt.Sprintf("%s: 2026-07-28 with %d users: not run; its clients can act as %d user(s) (only mcpgate-tls, given per-user tokens with -user-tokens, has more)", s.Name, u, s.ModernUsers))
				}
			}
		}
	}
	notes = append(notes, r.Config.Notes...)
	if len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, n := range notes {
		b.WriteString("- " + n + "\n")
	}
	return b.String()
}

// CSVRecords flattens the run into (system, tool, figure, sessions, value,
// unit) rows: one figure per row, easy to load into a spreadsheet.
func CSVRecords(r *Run) [][]string {
	out := [][]string{{"system", "tool", "figure", "sessions", "value", "unit"}}
	us := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64)
	}
	rec := func(sys, tool, fig string, n int, v, unit string) {
		out = append(out, []string{sys, tool, fig, strconv.Itoa(n), v, unit})
	}
	for _, s := range r.Systems {
		if s.Skipped != "" {
			continue
		}
		for _, l := range s.Load {
			rec(s.Name, l.Tool, "p50", l.Sessions, us(l.Latency.P50), "us")
			rec(s.Name, l.Tool, "p90", l.Sessions, us(l.Latency.P90), "us")
			rec(s.Name, l.Tool, "p99", l.Sessions, us(l.Latency.P99), "us")
			rec(s.Name, l.Tool, "calls_per_sec", l.Sessions, strconv.FormatFloat(l.CallsPerSec, 'f', 1, 64), "1/s")
			rec(s.Name, l.Tool, "errors", l.Sessions, strconv.Itoa(l.Errors), "count")
			rec(s.Name, l.Tool, "server_cpu_per_call", l.Sessions, us(l.ServerCPU), "us")
			rec(s.Name, l.Tool, "client_cpu_per_call", l.Sessions, us(l.ClientCPU), "us")
		}
		if st := s.Start; st != nil {
			rec(s.Name, r.Config.Trivial.Label, "session_start_p50", 1, us(st.Latency.P50), "us")
			rec(s.Name, r.Config.Trivial.Label, "session_start_p99", 1, us(st.Latency.P99), "us")
		}
		if i := s.Idle; i != nil {
			rec(s.Name, "", "idle_session_rss", i.Opened, strconv.FormatInt(i.PerSessionRSS, 10), "bytes")
			rec(s.Name, "", "idle_session_pss", i.Opened, strconv.FormatInt(i.PerSessionPSS, 10), "bytes")
		}
		for _, m := range s.Modern {
			fig := func(f string) string { return fmt.Sprintf("mcp2026_users%d_%s", m.Users, f) }
			rec(s.Name, m.Tool, fig("p50"), m.Sessions, us(m.Latency.P50), "us")
			rec(s.Name, m.Tool, fig("p90"), m.Sessions, us(m.Latency.P90), "us")
			rec(s.Name, m.Tool, fig("p99"), m.Sessions, us(m.Latency.P99), "us")
			rec(s.Name, m.Tool, fig("calls_per_sec"), m.Sessions, strconv.FormatFloat(m.CallsPerSec, 'f', 1, 64), "1/s")
			rec(s.Name, m.Tool, fig("errors"), m.Sessions, strconv.Itoa(m.Errors), "count")
			rec(s.Name, m.Tool, fig("server_cpu_per_call"), m.Sessions, us(m.ServerCPU), "us")
			rec(s.Name, m.Tool, fig("client_cpu_per_call"), m.Sessions, us(m.ClientCPU), "us")
			if c := m.Workers; c != nil {
				rec(s.Name, m.Tool, fig("user_workers"), m.Sessions, strconv.Itoa(c.Workers), "count")
				rec(s.Name, m.Tool, fig("worker_rss_per_user"), m.Sessions, strconv.FormatInt(c.PerUserRSS, 10), "bytes")
				rec(s.Name, m.Tool, fig("worker_pss_per_user"), m.Sessions, strconv.FormatInt(c.PerUserPSS, 10), "bytes")
			}
		}
		if h := s.Hold; h != nil {
			rec(s.Name, "", "held_answered", h.Sessions, strconv.Itoa(h.Answered), "count")
			rec(s.Name, "", "held_rss", h.Sessions, strconv.FormatInt(h.Memory.RSS, 10), "bytes")
			rec(s.Name, "", "held_pss", h.Sessions, strconv.FormatInt(h.Memory.PSS, 10), "bytes")
			rec(s.Name, r.Config.Trivial.Label, "held_call_p50", h.Sessions, us(h.Call.P50), "us")
			rec(s.Name, "", "held_idle_cpu", h.Sessions, strconv.FormatFloat(h.IdleCPU, 'f', 3, 64), "cores")
		}
	}
	return out
}

// writeResults writes results.json, results.csv, table.md and latency.png
// into dir.
func writeResults(r *Run, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mcpbench: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("mcpbench: encode results: %w", err)
	}
	var csvb strings.Builder
	w := csv.NewWriter(&csvb)
	_ = w.WriteAll(CSVRecords(r)) // a strings.Builder does not fail
	png, err := Chart(r)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"results.json": append(js, '\n'),
		"results.csv":  []byte(csvb.String()),
		"table.md":     []byte(Table(r)),
		"latency.png":  png,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("mcpbench: %w", err)
		}
	}
	return nil
}
