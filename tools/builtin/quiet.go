package builtin

import (
	"io"
	"sync/atomic"
	"time"
)

// freeQuiet is how long a session worker's stdin and stdout stay silent
// before it returns its start-up garbage to the system (see Run). Short
// beside the 300 ms of idleness the memory figures are taken at, long beside
// the gaps inside a start's exchange (initialize, its answer, the first
// request, its answer: well under 1 ms each once the worker runs).
const freeQuiet = 50 * time.Millisecond

// quiet runs a function once, the first time the input and output it
// watches have both been silent for a while. A worker's forced collection
// (debug.FreeOSMemory) at the start of serving took a whole collection and
// scavenge out of the initialize exchange it ran beside, about 3 ms of a
// 14 ms cold start on 2 busy cores (measured on workers started cold);
// run when the session first goes quiet, it frees the same memory
// in no request's way.
type quiet struct {
	d     time.Duration
	f     func()
	timer *time.Timer
	done  atomic.Bool
	again bool // everyQuiet: run f after each quiet spell, not once
}

// afterQuiet returns a quiet that runs f once after d without a read or a
// write through its reader and writer; the clock starts now.
func afterQuiet(d time.Duration, f func()) *quiet {
	q := &quiet{d: d, f: f}
	q.timer = time.AfterFunc(d, q.fire)
	return q
}

// everyQuiet returns a quiet that runs f each time its reader and writer
// have been silent for d since the last read or write (or since now),
// until stopped: once per quiet spell, however long the spell.
func everyQuiet(d time.Duration, f func()) *quiet {
	q := &quiet{d: d, f: f, again: true}
	q.timer = time.AfterFunc(d, q.fire)
	return q
}

func (q *quiet) fire() {
	if q.again {
		if !q.done.Load() {
			q.f()
		}
		return
	}
	if q.done.CompareAndSwap(false, true) {
		q.f()
	}
}

// touch restarts the clock, until f has run (or, for everyQuiet, until
// stopped).
func (q *quiet) touch() {
	if !q.done.Load() {
		q.timer.Reset(q.d)
	}
}

// stop gives up on f if it has not run yet.
func (q *quiet) stop() {
	q.done.Store(true)
	q.timer.Stop()
}

// reader returns r, whose reads restart the clock.
func (q *quiet) reader(r io.Reader) io.Reader { return quietReader{r, q} }

// writer returns w, whose writes restart the clock.
func (q *quiet) writer(w io.Writer) io.Writer { return quietWriter{w, q} }

type quietReader struct {
	r io.Reader
	q *quiet
}

func (r quietReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.q.touch()
	return n, err
}

type quietWriter struct {
	w io.Writer
	q *quiet
}

func (w quietWriter) Write(p []byte) (int, error) {
	w.q.touch()
	return w.w.Write(p)
}
