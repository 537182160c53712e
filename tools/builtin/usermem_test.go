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

// TestEveryQuietRunsAfterEachSpell: a per-user worker's free runs after
// each quiet spell (once per spell, however long), never while traffic
// comes less than the delay apart, and not at all once stopped.
func TestEveryQuietRunsAfterEachSpell(t *testing.T) {
	const d = time.Second
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		q := everyQuiet(d, func() { runs.Add(1) })
		r := q.reader(strings.NewReader(strings.Repeat("x", 100)))
		w := q.writer(io.Discard)
		buf := make([]byte, 1)
		burst := func() {
			for i := range 10 {
				time.Sleep(d / 2)
				if i%2 == 0 {
					_, _ = r.Read(buf)
				} else {
					_, _ = w.Write(buf)
				}
			}
		}
		burst()
		synctest.Wait()
		assert.Zero(t, runs.Load(), "ran inside a burst")
		time.Sleep(5 * d)
		synctest.Wait()
		assert.EqualValues(t, 1, runs.Load(), "after the first burst, once however long the spell")
		burst()
		synctest.Wait()
		assert.EqualValues(t, 1, runs.Load(), "ran inside the second burst")
		time.Sleep(d)
		synctest.Wait()
		assert.EqualValues(t, 2, runs.Load(), "after the second burst")
		q.stop()
		_, _ = w.Write(buf)
		time.Sleep(2 * d)
		synctest.Wait()
		assert.EqualValues(t, 2, runs.Load(), "a stopped quiet never runs again")
	})
}

// userWorker runs a per-user worker (its identity in the environment,
// over SQLite) in process and returns
// a client connected to it; the worker ends with the test.
func userWorker(t *testing.T) *mcp.ClientSession {
	t.Helper()
	env := map[string]string{}
	id := workerproto.Identity{User: "ada", SessionID: "i1", Scope: workerproto.ScopeUser}
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
	t.Cleanup(func() {
		require.NoError(t, cs.Close())
		assert.NoError(t, <-done)
	})
	return cs
}

// TestUserWorkerFreesAfterEachBurst: a per-user worker returns the heap it
// freed after each burst of calls, not only once as a session worker does.
func TestUserWorkerFreesAfterEachBurst(t *testing.T) {
	freed := make(chan struct{}, 8)
	old := freeOSMemory
	freeOSMemory = func() { freed <- struct{}{} }
	t.Cleanup(func() { freeOSMemory = old })

	cs := userWorker(t)
	for burst := range 2 {
		for range 3 {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"})
			require.NoError(t, err)
			require.False(t, res.IsError)
		}
		select {
		case <-freed:
		case <-time.After(time.Minute): // a guard against hanging, not a timing assert
			t.Fatalf("the per-user worker never freed after burst %d", burst+1)
		}
	}
}
