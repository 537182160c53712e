package main

import (
	"context"
	"time"
)

// idle measures what n idle sessions add to the system's memory.
func (b *bench) idle(ctx context.Context, n int) (IdleResult, error) {
	res := IdleResult{Sessions: n}
	before, err := b.memory()
	if err != nil {
		return res, err
	}
	sessions, errs := b.openMany(ctx, n, 8, b.openSession)
	defer closeAll(sessions, 32)
	res.Opened = len(sessions)
	res.FirstError = errs.String()
	// Let the sessions' background work (standalone SSE streams, worker
	// start-up allocations) finish before reading /proc; there is no event
	// to wait for in another process.
	select {
	case <-time.After(b.cfg.Settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	after, err := b.memory()
	if err != nil {
		return res, err
	}
	res.Before, res.After = before, after
	if res.Opened > 0 {
		res.PerSessionRSS = (after.RSS - before.RSS) / int64(res.Opened)
		res.PerSessionPSS = (after.PSS - before.PSS) / int64(res.Opened)
	}
	return res, nil
}
