package builtin

import "time"

// A per-user worker (workerproto.ScopeUser) lives as long as its user is
// active, serving bursts of calls with pauses between them, and there is
// one per active user: its private memory is what each user costs. Most of
// it is the Go heap, whose live part is under 1 MiB (the server, its tools'
// schemas, the database connections) while the runtime lets it grow to
// twice that or its 4 MiB floor between collections and keeps what it
// freed mapped; SQLite's own heap is about 0.1 MiB (measured). A lower GC
// percent (GOGC=50 in worker.env) keeps a busy worker's heap about 1.9 MiB
// smaller, at more collector CPU per call: the operator's choice, not a
// default (docs/benchmarks.md).

// userQuiet is how long a per-user worker's stdin and stdout stay silent
// before it returns the heap it freed to the system (debug.FreeOSMemory),
// again after each burst of calls: the runtime would otherwise keep it,
// returning it only slowly and never below the heap's goal. Long beside
// the gaps between the calls of a burst, so a busy worker never pays for
// it; short beside the pauses between a user's bursts (a model thinking,
// a person reading), where the memory would sit unused.
const userQuiet = time.Second
