package builtin

import (
	"runtime/debug"
	"time"
)

// A per-user worker (workerproto.ScopeUser) lives as long as its user is
// active, serving bursts of calls with pauses between them, and there is
// one per active user: its private memory is what each user costs. Most of
// it is the Go heap, whose live part is under 1 MiB (the server, its tools'
// schemas, the database connections) while the runtime lets it grow to
// twice that or its 4 MiB floor between collections and keeps what it
// freed mapped; SQLite's own heap is about 0.1 MiB (measured).

// userGCPercent is a per-user worker's GOGC: the heap may grow to 1.5
// times its live part (at least 2 MiB) between collections instead of
// twice it (at least 4 MiB). A collection of a heap this small takes a
// fraction of a millisecond of one core, concurrent with the calls; it
// lowered the heap a busy per-user worker keeps by about 1.8 MiB without
// a change in the call latency measured through the gateway
// (BenchmarkPerUserWorkerMemory in package gateway, docs/benchmarks.md).
const userGCPercent = 50

// userGC sets a per-user worker's GC percent to userGCPercent unless the
// operator chose one (GOGC in worker.env).
func userGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(userGCPercent)
	}
}

// userQuiet is how long a per-user worker's stdin and stdout stay silent
// before it returns the heap it freed to the system (debug.FreeOSMemory),
// again after each burst of calls: the runtime would otherwise keep it,
// returning it only slowly and never below the heap's goal. Long beside
// the gaps between the calls of a burst, so a busy worker never pays for
// it; short beside the pauses between a user's bursts (a model thinking,
// a person reading), where the memory would sit unused.
const userQuiet = time.Second
