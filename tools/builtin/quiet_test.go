package builtin

import (
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// TestQuietWaitsForSilence: the start-up free runs once, only after its
// input and output have both been silent for the whole delay, never while
// a start's exchange is still reading or answering, and not at all once
// stopped.
func TestQuietWaitsForSilence(t *testing.T) {
	const d = 50 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32 // the function runs on the timer's goroutine
		q := afterQuiet(d, func() { runs.Add(1) })
		r := q.reader(strings.NewReader(strings.Repeat("x", 10)))
		w := q.writer(io.Discard)
		buf := make([]byte, 1)
		for i := range 10 { // 10 × 40 ms of traffic, reads and writes in turn
			time.Sleep(d - 10*time.Millisecond)
			if i%2 == 0 {
				_, _ = r.Read(buf)
			} else {
				_, _ = w.Write(buf)
			}
			synctest.Wait()
			assert.Zero(t, runs.Load(), "ran after %d exchanges less than the delay apart", i+1)
		}
		time.Sleep(d)
		synctest.Wait()
		assert.EqualValues(t, 1, runs.Load(), "after the delay of silence")
		_, _ = w.Write(buf) // traffic after the run does not arm it again
		time.Sleep(2 * d)
		synctest.Wait()
		assert.EqualValues(t, 1, runs.Load(), "once only")

		var stopped atomic.Int32
		q = afterQuiet(d, func() { stopped.Add(1) })
		q.stop()
		q.touch()
		time.Sleep(2 * d)
		synctest.Wait()
		assert.Zero(t, stopped.Load(), "a stopped quiet never runs")
	})
}

// TestSessionWorkerFreesOnceQuiet: a worker started with its identity still
// returns its start-up garbage, once its first exchange (initialize and a
// call) has been answered and the session has gone quiet.
func TestSessionWorkerFreesOnceQuiet(t *testing.T) {
	freed := make(chan struct{})
	var answered atomic.Bool
	old := freeOSMemory
	freeOSMemory = func() {
		if !answered.Load() {
			t.Log("freed before the first call was answered (a stall longer than the delay)")
		}
		close(freed)
	}
	t.Cleanup(func() { freeOSMemory = old })

	env := map[string]string{}
	id := workerproto.Identity{User: "ada", SessionID: "s1"}
	for _, kv := range append(id.Environ(), (db.Config{DSN: filepath.Join(t.TempDir(), "data", "w.db")}).Environ()...) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), Program{Stdin: inR, Stdout: outW, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }, Version: "test"})
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"})
	require.NoError(t, err)
	answered.Store(true)
	select {
	case <-freed:
	case <-time.After(time.Minute): // a guard against hanging, not a timing assert
		t.Fatal("the idle session worker never returned its start-up garbage")
	}
	require.NoError(t, cs.Close())
	assert.NoError(t, <-done)
}
