package main

import (
	"fmt"
	"strconv"
	"time"
)

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
		if st := s.WarmStart; st != nil {
			rec(s.Name, r.Config.Trivial.Label, "session_start_user_holding_p50", 1, us(st.Latency.P50), "us")
			rec(s.Name, r.Config.Trivial.Label, "session_start_user_holding_p99", 1, us(st.Latency.P99), "us")
		}
		if i := s.Idle; i != nil {
			rec(s.Name, "", "idle_session_rss", i.Opened, strconv.FormatInt(i.PerSessionRSS, 10), "bytes")
			rec(s.Name, "", "idle_session_pss", i.Opened, strconv.FormatInt(i.PerSessionPSS, 10), "bytes")
			rec(s.Name, "", "idle_processes", i.Opened, strconv.Itoa(i.After.Procs), "count")
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
			rec(s.Name, m.Tool, fig("processes"), m.Sessions, strconv.Itoa(m.Processes), "count")
			if c := m.Workers; c != nil {
				rec(s.Name, m.Tool, fig("user_workers"), m.Sessions, strconv.Itoa(c.Workers), "count")
				rec(s.Name, m.Tool, fig("worker_rss_per_user"), m.Sessions, strconv.FormatInt(c.PerUserRSS, 10), "bytes")
				rec(s.Name, m.Tool, fig("worker_pss_per_user"), m.Sessions, strconv.FormatInt(c.PerUserPSS, 10), "bytes")
			}
		}
		if h := s.Hold; h != nil {
			rec(s.Name, "", "held_answered", h.Sessions, strconv.Itoa(h.Answered), "count")
			rec(s.Name, "", "held_users", h.Sessions, strconv.Itoa(h.Users), "count")
			rec(s.Name, "", "held_processes", h.Sessions, strconv.Itoa(h.Memory.Procs), "count")
			rec(s.Name, "", "held_rss", h.Sessions, strconv.FormatInt(h.Memory.RSS, 10), "bytes")
			rec(s.Name, "", "held_pss", h.Sessions, strconv.FormatInt(h.Memory.PSS, 10), "bytes")
			rec(s.Name, r.Config.Trivial.Label, "held_call_p50", h.Sessions, us(h.Call.P50), "us")
			rec(s.Name, "", "held_idle_cpu", h.Sessions, strconv.FormatFloat(h.IdleCPU, 'f', 3, 64), "cores")
		}
	}
	for _, p := range r.Pairs {
		if p.Skipped != "" {
			continue
		}
		sys := "pair:" + p.Name
		rec(sys, p.Tool, "a_p50", 1, us(p.ALatency.P50), "us")
		rec(sys, p.Tool, "b_p50", 1, us(p.BLatency.P50), "us")
		rec(sys, p.Tool, "b_minus_a_p50", 1, us(p.BLatency.P50-p.ALatency.P50), "us")
		rec(sys, p.Tool, "calls", 1, strconv.Itoa(p.Calls), "count")
		if c := p.SecondClient; c != nil {
			rec(sys, "", "second_client_new_processes", 1, strconv.Itoa(c.Second-c.First), "count")
		}
	}
	return out
}
