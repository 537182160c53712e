package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
	mp := r.system(sysMCPProxy)
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
	add("users the sessions act as", func(s *SystemResult) string {
		return strconv.Itoa(max(s.SessionUsers, 1))
	})
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
			for _, peer := range []*SystemResult{sdk, sg, mp} {
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
	// Against the floor's session start: a bare worker start.
	add("session start p50, user holding a session (ms)", func(s *SystemResult) string {
		if s.WarmStart == nil || s.WarmStart.Latency.Count == 0 {
			return "—"
		}
		var base float64
		if floor != nil && floor.Start != nil {
			base = float64(floor.Start.Latency.P50)
		}
		v := s.WarmStart.Latency.P50
		return withRatio(fmt.Sprintf("%.2f", float64(v)/float64(time.Millisecond)), float64(v), base, false)
	})
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
	add(fmt.Sprintf("processes with %d idle sessions", r.Config.Idle), func(s *SystemResult) string {
		if s.Idle == nil || s.Idle.Opened == 0 || s.Idle.After.Procs == 0 {
			return "—"
		}
		return thousands(int64(s.Idle.After.Procs))
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
	add(fmt.Sprintf("%d sessions held: users", n), held(func(h *HoldResult) string {
		return strconv.Itoa(max(h.Users, 1))
	}))
	add(fmt.Sprintf("%d sessions held: answered", n), held(func(h *HoldResult) string {
		return fmt.Sprintf("%d/%d", h.Answered, h.Sessions)
	}))
	add(fmt.Sprintf("%d sessions held: processes", n), held(func(h *HoldResult) string {
		return thousands(int64(h.Memory.Procs))
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
	if sdk != nil && sdk.Hold != nil {
		add(fmt.Sprintf("%d sessions held: PSS / call p50 vs sdk", n), held(func(h *HoldResult) string {
			return ratio(float64(h.Memory.PSS), float64(sdk.Hold.Memory.PSS)) + " / " +
				ratio(float64(h.Call.P50), float64(sdk.Hold.Call.P50))
		}))
	}

	var b strings.Builder
	header := []string{"figure"}
	for _, s := range cols {
		header = append(header, s.Name)
	}
	writeMarkdown(&b, header, rows)
	b.WriteString(modernTable(r, tools))
	b.WriteString(pairTable(r))
	b.WriteString(tableNotes(r))
	return b.String()
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
			var more []string
			for _, u := range r.Config.ModernUsers {
				if u > s.ModernUsers {
					more = append(more, strconv.Itoa(u))
				}
			}
			if len(more) > 0 {
				notes = append(notes, fmt.Sprintf("%s: 2026-07-28 with %s users: not run; its clients can act as %d user(s) (only mcpgate-tls, given per-user tokens with -user-tokens, has more)", s.Name, strings.Join(more, ", "), s.ModernUsers))
			}
		}
	}
	for _, p := range r.Pairs {
		switch {
		case p.Skipped != "":
			notes = append(notes, fmt.Sprintf("pair %s: skipped — %s", p.Name, p.Skipped))
		case p.Errors > 0 || p.FirstError != "":
			notes = append(notes, fmt.Sprintf("pair %s: %d errors; first: %s", p.Name, p.Errors, p.FirstError))
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
