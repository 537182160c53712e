package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// holdRun is one system's held sessions, measured in rounds: the runner
// opens the held sessions of every system first, then interleaves the
// rounds of calls, so that a burst of background load on the shared machine
// lands on every system alike.
type holdRun struct {
	res      HoldResult
	sessions []*session
	lat      Latencies
	errs     errOnce
	next     int    // the session the next call goes to, round robin
	stop     func() // ends the profile, if any
}

// startHold opens n sessions at once, checks that every one answers while
// all are open, reads the memory, and the CPU spent while nobody calls. The
// sessions stay open for holdRound until finishHold.
func (b *bench) startHold(ctx context.Context, n int) (*holdRun, error) {
	h := &holdRun{res: HoldResult{Sessions: n, Users: 1}, lat: make(Latencies, 0, 1024)}
	res := &h.res
	open, users := b.sessionOpener()
	res.Users = users
	t0 := time.Now()
	sessions, errs := b.openMany(ctx, n, 16, open)
	res.OpenTime = time.Since(t0)
	h.sessions = sessions
	res.Opened = len(sessions)
	res.FirstError = errs.String()
	if len(sessions) == 0 {
		return h, errors.New("mcpbench: no session opened")
	}
	// Every held session answers once more, now that all are open.
	var answered atomic.Int64
	var callErrs errOnce
	ch := make(chan *session)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for s := range ch {
				if err := call(ctx, s, b.trivial, b.cfg.CallTimeout); err != nil {
					callErrs.add(err)
					continue
				}
				answered.Add(1)
			}
		})
	}
	for _, s := range sessions {
		ch <- s
	}
	close(ch)
	wg.Wait()
	res.Answered = int(answered.Load())
	if res.FirstError == "" {
		res.FirstError = callErrs.String()
	}
	mem, err := b.memory()
	if err != nil {
		return h, err
	}
	res.Memory = mem
	// What the held sessions cost while nobody calls: CPU over a quiet
	// window, in cores.
	if pids, err := b.t.pids(); err == nil {
		if c0, err := b.cpu(pids); err == nil {
			t0 := time.Now()
			select {
			case <-time.After(b.cfg.Settle):
			case <-ctx.Done():
				return h, ctx.Err()
			}
			if c1, err := b.cpu(pids); err == nil {
				res.IdleCPU = float64(c1.server-c0.server) / float64(time.Since(t0))
			}
		}
		if b.profile != nil {
			h.stop = b.profile(Tool{Label: "held", Name: b.trivial.Name}, n, pids)
		}
	}
	return h, nil
}

// holdRound makes calls for d, one at a time, round robin over the held
// sessions, carrying on from where the previous round stopped.
func (b *bench) holdRound(ctx context.Context, h *holdRun, d time.Duration) {
	if len(h.sessions) == 0 {
		return
	}
	end := time.Now().Add(d)
	for time.Now().Before(end) && ctx.Err() == nil {
		s := h.sessions[h.next%len(h.sessions)]
		h.next++
		c0 := time.Now()
		if err := call(ctx, s, b.trivial, b.cfg.CallTimeout); err != nil {
			h.errs.add(err)
			continue
		}
		h.lat = append(h.lat, time.Since(c0))
	}
}

// finishHold closes the held sessions and summarises the calls of every
// round.
func (b *bench) finishHold(h *holdRun) HoldResult {
	if h.stop != nil {
		h.stop()
	}
	closeAll(h.sessions, 32)
	res := h.res
	res.Call = Summarize(h.lat)
	res.CallErrors = int(h.errs.n.Load())
	if res.FirstError == "" {
		res.FirstError = h.errs.String()
	}
	return res
}

// sessionOpener opens the sessions of the closed loops and of the hold
// phase: spread over cfg.SessionUsers users on a system that can act as
// that many, else all of its one user.
func (b *bench) sessionOpener() (opener, int) {
	users := b.cfg.SessionUsers
	ut, ok := b.t.(userTarget)
	if !ok || users < 2 || len(ut.modernUsers()) < users {
		return b.openSession, 1
	}
	return func(ctx context.Context, i int) (*session, error) { return ut.openUser(ctx, i%users) }, users
}

// userTarget is a system whose sessions can act as several users.
type userTarget interface {
	// openUser starts a session of modernUsers()[u].
	openUser(ctx context.Context, u int) (*session, error)
	modernUsers() []string
}

// hold is the held phase of one system alone, its calls in a single round.
func (b *bench) hold(ctx context.Context, n int) (HoldResult, error) {
	h, err := b.startHold(ctx, n)
	if err == nil {
		b.holdRound(ctx, h, b.cfg.Duration)
	}
	return b.finishHold(h), err
}
