package main

import (
	"context"
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
