package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// live is a started system and the bench driving it.
type live struct {
	res *SystemResult
	b   *bench
}

// runAll starts every system, then runs each phase on every system before
// the next phase, so that a change in the machine's background load during
// the run (it is shared) spreads over all systems instead of landing on one.
// A phase that fails on a system leaves its other figures in place.
func runAll(ctx context.Context, r *Run, client *mcp.Client, logDir string, stderr io.Writer) {
	cfg := r.Config
	r.Systems = make([]SystemResult, len(cfg.Systems))
	var systems, modern []live // sessions' phases, the stateless phase
	running := map[string]target{}
	for i, name := range cfg.Systems {
		res := &r.Systems[i]
		*res = SystemResult{Name: name, Skipped: cfg.Skip[name]}
		if res.Skipped != "" {
			progress(stderr, name, "skipped: %s", res.Skipped)
			continue
		}
		t, err := startTarget(ctx, cfg, client, name, logDir)
		if err != nil {
			res.Error = err.Error()
			progress(stderr, name, "failed to start: %v", err)
			continue
		}
		defer t.stop()
		running[name] = t
		progress(stderr, name, "started")
		b := &bench{cfg: cfg, t: t, trivial: cfg.Trivial}
		if slices.Contains(cfg.Perf, name) {
			b.profile = perfRecorder(filepath.Join(cfg.Out, "perf"), name, stderr)
		}
		if mt, ok := t.(modernTarget); ok && slices.Contains(modernSystems, cfg.kind(name)) {
			res.ModernUsers = len(mt.modernUsers())
			modern = append(modern, live{res: res, b: b})
		}
		if cfg.kind(name) != sysSDKStateless {
			_, res.SessionUsers = b.sessionOpener()
			systems = append(systems, live{res: res, b: b})
		}
	}

	if cfg.Idle > 0 {
		for _, s := range systems {
			idle, err := s.b.idle(ctx, cfg.Idle)
			s.res.Idle = &idle
			fail(s.res, err)
			progress(stderr, s.res.Name, "idle: %d/%d sessions, %.2f MiB RSS (%.2f MiB PSS) each %s",
				idle.Opened, idle.Sessions, mib(idle.PerSessionRSS), mib(idle.PerSessionPSS), errNote(idle.FirstError))
		}
	}
	if cfg.Starts > 0 {
		for _, s := range systems {
			st := s.b.starts(ctx, cfg.Starts)
			s.res.Start = &st
			progress(stderr, s.res.Name, "session start: p50 %s p99 %s (%d errors) %s",
				fmtDur(st.Latency.P50), fmtDur(st.Latency.P99), st.Errors, errNote(st.FirstError))
			warm := s.b.warmStarts(ctx, cfg.Starts)
			s.res.WarmStart = &warm
			progress(stderr, s.res.Name, "session start, the user holding a session: p50 %s p99 %s (%d errors) %s",
				fmtDur(warm.Latency.P50), fmtDur(warm.Latency.P99), warm.Errors, errNote(warm.FirstError))
		}
	}
	tools := []Tool{cfg.Trivial}
	if cfg.Realistic != nil {
		tools = append(tools, *cfg.Realistic)
	}
	// Each closed loop runs in rounds, the systems taking turns; later
	// rounds need only a short warm-up, their sessions being warm already.
	per := cfg.Duration / time.Duration(cfg.Rounds)
	for _, tool := range tools {
		for _, n := range cfg.Concurrency {
			runs := make([]*loadRun, len(systems))
			for i, s := range systems {
				runs[i] = s.b.startLoad(ctx, tool, n)
			}
			for r := range cfg.Rounds {
				warm := cfg.Warmup
				if r > 0 {
					warm = min(warm, 100*time.Millisecond)
				}
				for i, s := range systems {
					s.b.round(ctx, runs[i], warm, per)
				}
			}
			for i, s := range systems {
				lr := s.b.finishLoad(runs[i])
				s.res.Load = append(s.res.Load, lr)
				progress(stderr, s.res.Name, "%s %s @%d: p50 %s p99 %s, %.0f calls/s (%d errors) %s",
					tool.Label, tool.Name, n, fmtDur(lr.Latency.P50), fmtDur(lr.Latency.P99), lr.CallsPerSec, lr.Errors, errNote(lr.FirstError))
			}
		}
	}
	if cfg.Hold > 0 {
		var held []live
		for _, s := range systems {
			if slices.Contains(cfg.HoldSystems, s.res.Name) {
				held = append(held, s)
			}
		}
		runHold(ctx, cfg, held, stderr)
	}
	if len(cfg.Pairs) > 0 {
		r.Pairs = runPairs(ctx, pairEnv{cfg: cfg, client: client, logDir: logDir, running: running}, stderr)
	}
	// Last: the per-user workers it starts outlive it (until their idle
	// timeout), and would count in the memory figures of the phases above.
	if cfg.ModernClients > 0 {
		runModern(ctx, cfg, modern, tools, per, stderr)
	}
}

// runHold is the held phase: the held sessions of every system are opened
// first (each system's memory and idle CPU read as its own are opened),
// and all stay open while the calls to them run in rounds that the systems
// take in turn, as the closed loops do.
func runHold(ctx context.Context, cfg Config, systems []live, stderr io.Writer) {
	runs := make([]*holdRun, len(systems))
	for i, s := range systems {
		h, err := s.b.startHold(ctx, cfg.Hold)
		runs[i] = h
		fail(s.res, err)
		progress(stderr, s.res.Name, "hold: %d opened, %d answered of %d in %s; %.0f MiB RSS, %.0f MiB PSS; %.2f cores idle",
			h.res.Opened, h.res.Answered, h.res.Sessions, h.res.OpenTime.Round(time.Millisecond),
			mib(h.res.Memory.RSS), mib(h.res.Memory.PSS), h.res.IdleCPU)
		if err != nil { // not measured: its sessions are held no longer
			closeAll(h.sessions, 32)
			h.sessions = nil
		}
	}
	per := cfg.Duration / time.Duration(cfg.Rounds)
	for range cfg.Rounds {
		for i, s := range systems {
			s.b.holdRound(ctx, runs[i], per)
		}
	}
	for i, s := range systems {
		h := s.b.finishHold(runs[i])
		s.res.Hold = &h
		progress(stderr, s.res.Name, "hold: call p50 %s p99 %s over %d calls (%d errors) %s",
			fmtDur(h.Call.P50), fmtDur(h.Call.P99), h.Call.Count, h.CallErrors, errNote(h.FirstError))
	}
}

// runModern is the stateless phase: for each tool and user count, a closed
// loop of cfg.ModernClients stateless 2026-07-28 clients on every system
// that can act as that many users, in rounds taken in turn as in the load
// phase.
func runModern(ctx context.Context, cfg Config, systems []live, tools []Tool, per time.Duration, stderr io.Writer) {
	n := cfg.ModernClients
	for _, tool := range tools {
		for _, users := range cfg.ModernUsers {
			runs := make([]*loadRun, len(systems))
			for i, s := range systems {
				mt := s.b.t.(modernTarget)
				if modernUsersOf(mt, users) == nil {
					continue
				}
				runs[i] = s.b.startModern(ctx, mt, tool, n, users)
			}
			for r := range cfg.Rounds {
				warm := cfg.Warmup
				if r > 0 {
					warm = min(warm, 100*time.Millisecond)
				}
				for i, s := range systems {
					if runs[i] != nil {
						s.b.round(ctx, runs[i], warm, per)
					}
				}
			}
			for i, s := range systems {
				if runs[i] == nil {
					continue
				}
				census := false
				if ht, ok := s.b.t.(*httpTarget); ok {
					census = ht.perUserWorkers
				}
				mr := s.b.finishModern(runs[i], s.b.t.(modernTarget), users, census)
				s.res.Modern = append(s.res.Modern, mr)
				workers := ""
				if c := mr.Workers; c != nil {
					workers = fmt.Sprintf("; %d per-user workers of %d users, %.2f MiB RSS (%.2f MiB PSS) per user",
						c.Workers, c.Users, mib(c.PerUserRSS), mib(c.PerUserPSS))
				}
				progress(stderr, s.res.Name, "2026-07-28 %s %s @%d, %d users: p50 %s p99 %s, %.0f calls/s (%d errors)%s %s",
					tool.Label, tool.Name, n, users, fmtDur(mr.Latency.P50), fmtDur(mr.Latency.P99), mr.CallsPerSec, mr.Errors,
					workers, errNote(mr.FirstError))
			}
		}
	}
}

func errNote(s string) string {
	if s == "" {
		return ""
	}
	return "— first error: " + s
}

// fail records err as res's error unless it has one already.
func fail(res *SystemResult, err error) {
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
}
