package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// hold opens n sessions at once, checks that every one answers while all are
// open, reads the memory, and measures calls one at a time meanwhile.
func (b *bench) hold(ctx context.Context, n int) (HoldResult, error) {
	res := HoldResult{Sessions: n}
	t0 := time.Now()
	sessions, errs := b.openMany(ctx, n, 16, b.openSession)
	res.OpenTime = time.Since(t0)
	defer closeAll(sessions, 32)
	res.Opened = len(sessions)
	res.FirstError = errs.String()
	if len(sessions) == 0 {
		return res, errors.New("mcpbench: no session opened")
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
		return res, err
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
				return res, ctx.Err()
			}
			if c1, err := b.cpu(pids); err == nil {
				res.IdleCPU = float64(c1.server-c0.server) / float64(time.Since(t0))
			}
		}
		if b.profile != nil {
			defer b.profile(Tool{Label: "held", Name: b.trivial.Name}, n, pids)()
		}
	}
	// Meanwhile: one call at a time, round robin over the held sessions.
	lat := make(Latencies, 0, 1024)
	var callErr errOnce
	end := time.Now().Add(b.cfg.Duration)
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		s := sessions[i%len(sessions)]
		c0 := time.Now()
		if err := call(ctx, s, b.trivial, b.cfg.CallTimeout); err != nil {
			callErr.add(err)
			continue
		}
		lat = append(lat, time.Since(c0))
	}
	res.Call = Summarize(lat)
	res.CallErrors = int(callErr.n.Load())
	if res.FirstError == "" {
		res.FirstError = callErr.String()
	}
	return res, nil
}
