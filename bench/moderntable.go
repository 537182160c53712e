package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
			if u > 1 {
				// What spreading the clients over users costs: the
				// same system's calls/s at u users over 1 user's.
				add(fmt.Sprintf("%s calls/s @%d, %s vs 1 user", tool.Name, n, users(u)), func(s *SystemResult) string {
					m, one := s.modern(tool.Label, u), s.modern(tool.Label, 1)
					if m == nil || one == nil {
						return "—"
					}
					return ratio(m.CallsPerSec, one.CallsPerSec)
				})
			}
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
		add(fmt.Sprintf("processes after the loop, %s", users(u)), func(s *SystemResult) string {
			m := s.modern(tools[0].Label, u)
			if m == nil || m.Processes == 0 {
				return "—"
			}
			return strconv.Itoa(m.Processes)
		})
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
