package builtin

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/workerproto"
)

// sharedFiles are never collected (see TestPollableStdin).
var sharedFiles []*os.File

func TestEnvironSetsOneProc(t *testing.T) {
	assert.Equal(t, []string{"GOMAXPROCS=1"}, Environ())
}

func TestPerUserProcs(t *testing.T) {
	cases := []struct {
		name, scope, gomaxprocs string
		ncpu, want              int
	}{
		{"session worker keeps the gateway's 1", workerproto.ScopeSession, "1", 8, 0},
		{"unnamed scope is a session", "", "1", 8, 0},
		{"per-user worker takes every core", workerproto.ScopeUser, "1", 8, 8},
		{"per-user worker on one core", workerproto.ScopeUser, "1", 1, 0},
		{"operator's own setting stays", workerproto.ScopeUser, "3", 8, 0},
		{"no setting: the runtime's default", workerproto.ScopeUser, "", 8, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, perUserProcs(c.scope, c.gomaxprocs, c.ncpu))
		})
	}
}

// TestPollableStdin: a blocking pipe, as the gateway hands the worker, comes
// back served by the poller (deadlines work only there) and reads the same
// bytes; a file that is no pipe comes back as it was.
func TestPollableStdin(t *testing.T) {
	var p [2]int
	require.NoError(t, syscall.Pipe(p[:])) // blocking, unlike os.Pipe's
	r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer w.Close()
	require.ErrorIs(t, r.SetReadDeadline(time.Time{}), os.ErrNoDeadline, "a blocking pipe is not polled")

	pr := PollableStdin(r)
	require.NoError(t, pr.SetReadDeadline(time.Time{}), "now it is")
	_, err := w.Write([]byte("{\"jsonrpc\":\"2.0\"}\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	got, err := io.ReadAll(pr)
	require.NoError(t, err)
	assert.Equal(t, "{\"jsonrpc\":\"2.0\"}\n", string(got))
	// pr and r share the descriptor, as the worker's stdin and os.Stdin
	// do: close it once, and keep both from a collection that would close
	// the number again after another test reused it.
	require.NoError(t, pr.Close())
	sharedFiles = append(sharedFiles, r, pr)

	f, err := os.CreateTemp(t.TempDir(), "stdin")
	require.NoError(t, err)
	defer f.Close()
	assert.Same(t, f, PollableStdin(f), "a regular file")

	or, ow, err := os.Pipe()
	require.NoError(t, err)
	defer or.Close()
	defer ow.Close()
	assert.Same(t, or, PollableStdin(or), "already polled")
}
