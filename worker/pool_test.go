package worker

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/workerproto"
)

// lineLog is a slog handler's writer that hands each record to a channel,
// so that a test can await a worker's stderr line.
type lineLog chan string

func (l lineLog) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default: // a test that stopped reading does not block the worker
	}
	return len(p), nil
}

// awaitLog returns the first record that contains want.
func awaitLog(t *testing.T, l lineLog, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		select {
		case rec := <-l:
			if strings.Contains(rec, want) {
				return rec
			}
		case <-ctx.Done():
			t.Fatalf("no log record with %q", want)
		}
	}
}

// echoFirst is a pre-startable worker: it says its first stdin line on
// stderr, then reads on until its stdin closes.
// Then it lists its environment, one ENV line each, and ENDENV. It keeps
// stdout open: a worker that closes it has gone, for a Conn.
var echoFirst = []string{"/bin/sh", "-c", `read -r first; printf 'FIRST %s\n' "$first" >&2; env | sed 's/^/ENV /' >&2; echo ENDENV >&2; exec cat`}

func poolLauncher(t *testing.T, command []string, size int, log lineLog) *Launcher {
	t.Helper()
	l, err := NewLauncher(command, LauncherOptions{PoolSize: size, IdentityOnStdin: true, StopGrace: 2 * time.Second,
		Env: []string{"DB_SETTING=x"}, Logger: slog.New(slog.NewTextHandler(log, nil)),
		LookupEnv: func(k string) (string, bool) { return map[string]string{"PATH": "/usr/bin:/bin"}[k], k == "PATH" }})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		assert.NoError(t, l.StopPool(ctx))
	})
	return l
}

func stopConn(t *testing.T, c *Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	assert.NoError(t, c.Close(ctx, KindSessionEnded, "test over"))
}

// envOf collects the environment echoFirst lists on stderr.
func envOf(t *testing.T, log lineLog) []string {
	t.Helper()
	var env []string
	for {
		rec := awaitLog(t, log, "worker stderr")
		_, line, _ := strings.Cut(rec, "line=")
		line = strings.Trim(strings.TrimSpace(line), `"`)
		switch {
		case line == "ENDENV":
			return env
		case strings.HasPrefix(line, "ENV "):
			env = append(env, strings.TrimPrefix(line, "ENV "))
		}
	}
}

// TestPoolHandsIdentityFirst: a claimed worker's first stdin line is its
// session's identity, written before Start returns (so before any client
// message can be sent to it); its environment holds the base variables,
// worker.env and the marker, and no identity variable; two sessions never
// share a worker.
func TestPoolHandsIdentityFirst(t *testing.T) {
	log := make(lineLog, 64)
	l := poolLauncher(t, echoFirst, 2, log)
	l.StartPool()
	require.True(t, l.WaitPool(t.Context(), 2))

	var pids []int
	for _, s := range []Session{
		{User: "alice", ID: "s-alice", ReadOnly: true, Tools: []string{"query"}},
		{User: "bob", ID: "s-bob", ReadOnly: false, Tools: nil, Scope: workerproto.ScopeUser},
	} {
		c, err := l.Start(s, ConnConfig{Logger: slog.New(slog.NewTextHandler(log, nil))})
		require.NoError(t, err)
		t.Cleanup(func() { stopConn(t, c) })
		assert.True(t, c.Pooled(), "a ready pool was not used")
		// Sent before Start returned: a client message could only follow.
		rec := awaitLog(t, log, "FIRST")
		line := rec[strings.Index(rec, "FIRST ")+len("FIRST "):]
		line = strings.TrimSuffix(strings.TrimSpace(line), `"`)
		line = strings.ReplaceAll(line, `\"`, `"`)
		id, err := workerproto.ParseIdentityLine([]byte(line))
		require.NoError(t, err, "first line %q", line)
		assert.Equal(t, s.User, id.User)
		assert.Equal(t, s.ID, id.SessionID)
		assert.Equal(t, s.ReadOnly, id.ReadOnly)
		assert.Equal(t, s.Tools, id.Tools)
		env := envOf(t, log)
		assert.Contains(t, env, workerproto.EnvPrestarted+"=true")
		assert.Contains(t, env, "DB_SETTING=x")
		assert.Contains(t, env, "PATH=/usr/bin:/bin")
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			assert.False(t, workerproto.IsIdentityEnv(name), "a pre-started worker has %s", name)
		}
		select {
		case <-c.Done():
			t.Errorf("the claimed worker exited: %s", ExitDescription(c.proc.ExitErr()))
		default:
		}
		pids = append(pids, c.Pid())
	}
	assert.NotEqual(t, pids[0], pids[1], "two sessions got one worker")
	hits, misses := l.PoolStats()
	assert.Equal(t, [2]int64{2, 0}, [2]int64{hits, misses})
}

// TestPoolLongIdentityStartsCold: an identity whose line a pre-started
// worker would refuse (a user id from a very large token claim) is not sent
// to one: the session starts its own worker, the identity in its
// environment, and the pre-started workers stay for other sessions.
func TestPoolLongIdentityStartsCold(t *testing.T) {
	log := make(lineLog, 64)
	l := poolLauncher(t, echoFirst, 1, log)
	l.StartPool()
	require.True(t, l.WaitPool(t.Context(), 1))
	user := strings.Repeat("u", workerproto.MaxIdentityLine+1)
	c, err := l.Start(Session{User: user, ID: "s-long"}, ConnConfig{Logger: slog.New(slog.NewTextHandler(log, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { stopConn(t, c) })
	assert.False(t, c.Pooled(), "a line the worker refuses was handed to a pre-started one")
	hits, misses := l.PoolStats()
	assert.Equal(t, [2]int64{0, 1}, [2]int64{hits, misses})
	assert.True(t, l.WaitPool(t.Context(), 1), "the pre-started worker was used up")
}

// TestPoolNotForUndeclaredCommand: a command that has not declared that it
// reads its identity on stdin is never pre-started, whatever the size.
func TestPoolNotForUndeclaredCommand(t *testing.T) {
	log := make(lineLog, 64)
	envDump := []string{"/bin/sh", "-c", `env | sed 's/^/ENV /' >&2; echo ENDENV >&2; exec cat`}
	l, err := NewLauncher(envDump, LauncherOptions{PoolSize: 4, StopGrace: 2 * time.Second})
	require.NoError(t, err)
	l.StartPool()
	assert.False(t, l.WaitPool(t.Context(), 1))
	c, err := l.Start(Session{User: "alice", ID: "s"}, ConnConfig{Logger: slog.New(slog.NewTextHandler(log, nil))})
	require.NoError(t, err)
	defer stopConn(t, c)
	assert.False(t, c.Pooled())
	assert.Contains(t, envOf(t, log), workerproto.EnvUser+"=alice")
}

// TestPoolBacksOff: a worker that dies at once does not turn the pool
// into a fork loop: after the first failures it starts one worker per
// backoff, and the backoff grows.
func TestPoolBacksOff(t *testing.T) {
	log := make(lineLog, 256)
	l := poolLauncher(t, []string{"/bin/sh", "-c", "exit 3"}, 3, log)
	asked := make(chan time.Duration)
	fire := make(chan time.Time)
	l.pool.after = func(d time.Duration) <-chan time.Time { asked <- d; return fire }
	l.StartPool()
	first := <-asked
	assert.GreaterOrEqual(t, first, poolBackoffMin)
	last := first
	for range 6 {
		before := l.pool.starts.Load()
		fire <- time.Now()
		d := <-asked
		assert.LessOrEqual(t, l.pool.starts.Load()-before, int64(1), "more than one start per backoff")
		assert.GreaterOrEqual(t, d, last, "the backoff shrank while workers kept failing")
		last = d
	}
	assert.Greater(t, last, first, "the backoff never grew")
	assert.LessOrEqual(t, l.pool.starts.Load(), int64(3+6))
	awaitLog(t, log, "exited before a session claimed it")
	// Sessions still start (cold, or on a worker about to fail, as a
	// cold one would).
	c, err := l.Start(Session{User: "alice", ID: "s"}, ConnConfig{})
	require.NoError(t, err)
	stopConn(t, c)
	go func() { // StopPool may find run waiting on its backoff
		for range asked {
		}
	}()
}

// TestPoolReplacesDeadWorker: a pooled worker killed while waiting leaves
// the pool, is logged and replaced.
func TestPoolReplacesDeadWorker(t *testing.T) {
	log := make(lineLog, 64)
	l := poolLauncher(t, echoFirst, 2, log)
	waits := make(chan time.Duration, 16)
	l.pool.after = func(d time.Duration) <-chan time.Time {
		waits <- d
		c := make(chan time.Time, 1)
		c <- time.Now()
		return c
	}
	l.StartPool()
	require.True(t, l.WaitPool(t.Context(), 2))
	l.pool.mu.Lock()
	victim := l.pool.idle[0].proc
	l.pool.mu.Unlock()
	require.NoError(t, syscall.Kill(victim.Pid(), syscall.SIGKILL))
	awaitLog(t, log, "exited before a session claimed it")
	require.True(t, l.WaitPool(t.Context(), 2))
	l.pool.mu.Lock()
	pids := []int{l.pool.idle[0].proc.Pid(), l.pool.idle[1].proc.Pid()}
	l.pool.mu.Unlock()
	assert.False(t, slices.Contains(pids, victim.Pid()), "the dead worker is still pooled")
	assert.Equal(t, poolBackoffMin, <-waits, "a replacement after one failure waits the first backoff step")
	c, err := l.Start(Session{User: "alice", ID: "s"}, ConnConfig{})
	require.NoError(t, err)
	defer stopConn(t, c)
	assert.True(t, c.Pooled())
	assert.NotEqual(t, victim.Pid(), c.Pid())
}

// TestStopPoolStopsWorkers: StopPool stops every waiting worker and the
// refills; later sessions start cold.
func TestStopPoolStopsWorkers(t *testing.T) {
	l := poolLauncher(t, echoFirst, 3, make(lineLog, 64))
	l.StartPool()
	require.True(t, l.WaitPool(t.Context(), 3))
	l.pool.mu.Lock()
	var procs []*Process
	for _, e := range l.pool.idle {
		procs = append(procs, e.proc)
	}
	l.pool.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, l.StopPool(ctx))
	for _, p := range procs {
		select {
		case <-p.Done():
		default:
			t.Errorf("pooled worker %d still runs after StopPool", p.Pid())
		}
	}
	require.NoError(t, l.StopPool(ctx), "a second StopPool")
	l.StartPool() // does nothing once stopped
	assert.False(t, l.WaitPool(ctx, 1))
	c, err := l.Start(Session{User: "alice", ID: "s"}, ConnConfig{})
	require.NoError(t, err)
	defer stopConn(t, c)
	assert.False(t, c.Pooled())
}
