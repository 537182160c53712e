package main

import (
	"context"
	"fmt"
	"time"
)

// starts measures session start, one at a time, count times.
func (b *bench) starts(ctx context.Context, count int) StartResult {
	res := StartResult{Count: count}
	var errs errOnce
	lat := make(Latencies, 0, count)
	for range count {
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		s, err := b.openAnswered(ctx, b.openSession, 0)
		d := time.Since(t0)
		if err != nil {
			errs.add(err)
			continue
		}
		_ = s.Close()
		lat = append(lat, d)
	}
	res.Errors = int(errs.n.Load())
	res.FirstError = errs.String()
	res.Latency = Summarize(lat)
	return res
}

// warmStarts is starts while the same user holds one session open the
// whole time: a session start for a user who already has a worker, which a
// gateway that lets a user's sessions share a worker process need not
// start. Whatever the system does, this measures it.
func (b *bench) warmStarts(ctx context.Context, count int) StartResult {
	keep, err := b.openAnswered(ctx, b.openSession, 0)
	if err != nil {
		return StartResult{Count: count, Errors: count, FirstError: fmt.Sprintf("the session held open: %v", err)}
	}
	defer keep.Close()
	return b.starts(ctx, count)
}
