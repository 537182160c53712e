package main

import (
	"math"
	"slices"
	"time"
)

// Latencies collects the durations of calls. It is not safe for concurrent
// use: each load goroutine keeps its own and they are merged afterwards, so
// the hot loop never takes a lock.
type Latencies []time.Duration

// Merge returns all samples of ls in one slice.
func Merge(ls ...Latencies) Latencies {
	n := 0
	for _, l := range ls {
		n += len(l)
	}
	out := make(Latencies, 0, n)
	for _, l := range ls {
		out = append(out, l...)
	}
	return out
}

// Summary is what a table shows of a set of latencies.
type Summary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	Mean  time.Duration `json:"mean_ns"`
}

// Summarize sorts a copy of l and reads its percentiles. An empty set gives
// the zero Summary, which tables print as "—" rather than as a fake 0 µs.
func Summarize(l Latencies) Summary {
	if len(l) == 0 {
		return Summary{}
	}
	s := slices.Clone(l)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		Count: len(s),
		P50:   Percentile(s, 50),
		P90:   Percentile(s, 90),
		P99:   Percentile(s, 99),
		Max:   s[len(s)-1],
		Mean:  sum / time.Duration(len(s)),
	}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted samples by
// the nearest-rank method: the smallest sample such that at least p percent
// of the samples are less than or equal to it. Nearest rank never invents a
// value that was not measured, which matters for p99 of small sets.
func Percentile(sorted Latencies, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	// rank = ceil(p/100 * n); the epsilon keeps an exact product such as
	// 99*100/100 from rounding up past itself in floating point.
	rank := int(math.Ceil(p*float64(n)/100 - 1e-9))
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}
