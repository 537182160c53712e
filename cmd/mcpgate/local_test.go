//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/filelock"
	"github.com/mcpgate/mcpgate/local"
)

// localSetup is a private runtime directory and the environment a shim
// (and the daemon it starts) runs with.
type localSetup struct {
	dir  string // scratch
	sock string // the per-user default socket under XDG_RUNTIME_DIR
	env  []string
}

func newLocalSetup(t *testing.T, extra ...string) *localSetup {
	t.Helper()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(run, 0o700))
	s := &localSetup{dir: dir, sock: filepath.Join(run, "mcpgate", local.SocketName)}
	s.env = append(os.Environ(),
		"XDG_RUNTIME_DIR="+run,
		"MCPGATE_DATABASE_PATH="+filepath.Join(dir, "data", "mcpgate.db"),
		"MCPGATE_LIMITS_WORKER_START_TIMEOUT=60s",
		"MCPGATE_LIMITS_DRAIN_MIN=1ms",
	)
	s.env = append(s.env, extra...)
	t.Cleanup(func() { s.killDaemon(t) })
	return s
}

// log is the daemon's log, beside the socket.
func (s *localSetup) log() string {
	b, _ := os.ReadFile(local.LogPath(s.sock))
	return string(b)
}

// workerStarted matches the log line of a worker's start, a session's or
// a user's.
var workerStarted = regexp.MustCompile(`msg="gateway: (?:per-user )?worker started".* pid=(\d+)`)

var servingPid = regexp.MustCompile(`msg="mcpgate: serving" socket=\S+ issuer=\S+ system=\w+ pid=(\d+)`)

// daemonPid is the pid of the daemon that logged last that it serves.
func (s *localSetup) daemonPid(t *testing.T) int {
	t.Helper()
	m := servingPid.FindAllStringSubmatch(s.log(), -1)
	require.NotEmpty(t, m, "no daemon has served:\n%s", s.log())
	pid, _ := strconv.Atoi(m[len(m)-1][1])
	return pid
}

// starts is how many daemons have served the socket.
func (s *localSetup) starts() int { return len(servingPid.FindAllString(s.log(), -1)) }

// awaitDaemonGone returns once no daemon holds the socket's lock: the
// kernel drops it when the daemon's process ends, however it ends.
func (s *localSetup) awaitDaemonGone(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := filelock.Acquire(ctx, local.LockPath(s.sock))
	require.NoError(t, err, "the daemon did not exit:\n%s", s.log())
	require.NoError(t, l.Unlock())
}

func (s *localSetup) killDaemon(t *testing.T) {
	for _, m := range servingPid.FindAllStringSubmatch(s.log(), -1) {
		if pid, _ := strconv.Atoi(m[1]); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if t.Failed() {
		t.Logf("daemon log:\n%s", s.log())
	}
}

// shim connects the go-sdk client to `mcpgate bridge --socket` (this test
// binary), as an MCP client launches it, at protocol version (""
// for the SDK's latest).
func (s *localSetup) shim(t *testing.T, version string, args ...string) (*mcp.ClientSession, *lockedBuffer) {
	t.Helper()
	var stderr lockedBuffer
	cmd := exec.Command(os.Args[0], append([]string{"bridge", "--socket"}, args...)...)
	cmd.Env = s.env
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "local-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "shim stderr:\n%s\ndaemon log:\n%s", stderr.String(), s.log())
	return cs, &stderr
}

// status calls the status tool: who the worker serves and its session
// (the worker's instance id for a per-user worker).
func status(t *testing.T, cs *mcp.ClientSession) (user, session string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	b, _ := json.Marshal(res.StructuredContent)
	var st struct {
		User      string `json:"user"`
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(b, &st))
	return st.User, st.SessionID
}

// TestLocalTwoShimsOneDaemon: two clients started at once, each through
// its own shim, start one daemon and are both served: on 2026-07-28 by
// one worker (the user's), on 2025-11-25 by one worker per session, as
// over TCP.
func TestLocalTwoShimsOneDaemon(t *testing.T) {
	for _, tc := range []struct {
		version  string
		sessions string // worker.sessions
		workers  int
	}{{"", "", 1}, {"2025-11-25", "", 1}, {"2025-11-25", "per_session", 2}} {
		t.Run("version "+tc.version+" "+tc.sessions, func(t *testing.T) {
			s := newLocalSetup(t, "MCPGATE_WORKER_SESSIONS="+tc.sessions)
			var wg sync.WaitGroup
			sessions := make([]*mcp.ClientSession, 2)
			for i := range sessions {
				wg.Go(func() { sessions[i], _ = s.shim(t, tc.version) })
			}
			wg.Wait()
			require.NotNil(t, sessions[0])
			require.NotNil(t, sessions[1])
			u0, id0 := status(t, sessions[0])
			u1, id1 := status(t, sessions[1])
			assert.Equal(t, u0, u1)
			if tc.version == "" {
				assert.Equal(t, "2026-07-28", sessions[0].InitializeResult().ProtocolVersion)
				assert.Equal(t, id0, id1, "one per-user worker serves both clients")
			} else {
				assert.NotEqual(t, id0, id1, "a session each")
			}
			assert.Equal(t, 1, s.starts(), "one daemon for two shims")
			pids := map[string]bool{} // a session hosted in a shared worker logs its start too
			for _, m := range workerStarted.FindAllStringSubmatch(s.log(), -1) {
				pids[m[1]] = true
			}
			assert.Equal(t, tc.workers, len(pids), "worker processes")
			for _, cs := range sessions {
				require.NoError(t, cs.Close())
			}
		})
	}
}

// TestLocalDaemonLifecycle: the first shim starts the daemon, the second
// reuses it; with no client and no worker left it exits after
// server.idle_exit, and the next shim starts it again; a daemon killed
// with SIGKILL leaves its socket behind, stale, and the next shim
// replaces it.
func TestLocalDaemonLifecycle(t *testing.T) {
	// 2025-11-25 sessions in processes of their own end with their
	// clients (the shim's DELETE), so the daemon is idle as soon as both
	// have gone. (A shared worker would outlive them by
	// limits.session_idle_timeout, as a per-user worker does.)
	s := newLocalSetup(t, "MCPGATE_SERVER_IDLE_EXIT=3s", "MCPGATE_WORKER_SESSIONS=per_session")
	a, _ := s.shim(t, "2025-11-25")
	status(t, a)
	b, _ := s.shim(t, "2025-11-25")
	status(t, b)
	assert.Equal(t, 1, s.starts(), "the second shim reuses the daemon")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	s.awaitDaemonGone(t)
	assert.Contains(t, s.log(), "no client and no worker for server.idle_exit; exiting")
	_, err := os.Lstat(s.sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "an idle daemon removes its socket")

	// (On a slow machine a daemon may reach its idle exit before its
	// shim's client speaks; the shim then starts another: more than one
	// start is fine, none is not.)
	c, _ := s.shim(t, "2025-11-25")
	status(t, c)
	assert.GreaterOrEqual(t, s.starts(), 2, "a shim after the idle exit starts it again")
	require.NoError(t, syscall.Kill(s.daemonPid(t), syscall.SIGKILL))
	s.awaitDaemonGone(t)
	fi, err := os.Lstat(s.sock)
	require.NoError(t, err, "SIGKILL leaves the socket behind")
	require.NotZero(t, fi.Mode()&os.ModeSocket)
	killed := s.starts()
	// Its client gone, the shim does not start a daemon only to end the
	// session the killed one held.
	require.NoError(t, c.Close())
	assert.Equal(t, killed, s.starts())

	d, _ := s.shim(t, "2025-11-25")
	status(t, d)
	assert.Greater(t, s.starts(), killed, "the stale socket was replaced")
	require.NoError(t, d.Close())
	s.awaitDaemonGone(t)
}

// TestLocalPathSafety: a socket directory of another account, one that
// others may write, and a socket path that is a symbolic link are refused
// by both sides, the shim and the daemon, with a message naming the path
// and the fix; nothing listens there.
func TestLocalPathSafety(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir, sock string)
		path    string // the path the message names: "dir" or "sock"
		want    string
	}{
		{"another account's directory", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Mkdir(dir, 0o700))
			first, _ := testUIDs(0, 1)
			require.NoError(t, os.Chown(dir, first, first))
		}, "dir", "belongs to another account"},
		{"world-writable directory", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, 0o777))
		}, "dir", "chmod go-w"},
		{"symlinked socket", func(t *testing.T, dir, sock string) {
			require.NoError(t, os.Mkdir(dir, 0o700))
			// Someone else's socket, reached through a link.
			other := filepath.Join(t.TempDir(), "other.sock")
			ln, err := net.Listen("unix", other)
			require.NoError(t, err)
			t.Cleanup(func() { ln.Close() })
			require.NoError(t, os.Symlink(other, sock))
		}, "sock", "is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mcpgate")
			sock := filepath.Join(dir, local.SocketName)
			tc.prepare(t, dir, sock)
			named := map[string]string{"dir": dir, "sock": sock}[tc.path]
			env := map[string]string{"MCPGATE_DATABASE_PATH": filepath.Join(t.TempDir(), "db"), "MCPGATE_METRICS_LISTEN": "off"}

			_, _, err := runWithEnv(t, env, "bridge", "--socket="+sock)
			require.Error(t, err)
			assert.Contains(t, err.Error(), named)
			assert.Contains(t, err.Error(), tc.want)

			_, _, err = runWithEnv(t, env, "serve", "--daemon", "--foreground", "--listen", "unix:"+sock)
			require.Error(t, err)
			assert.Contains(t, err.Error(), named)
			assert.Contains(t, err.Error(), tc.want)

			fi, err := os.Lstat(sock)
			if tc.path == "sock" {
				require.NoError(t, err)
				assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is left alone")
			} else {
				assert.ErrorIs(t, err, os.ErrNotExist, "nothing listens")
			}
		})
	}
}

// daemonInProcess runs `mcpgate serve --daemon --foreground` with the
// configuration file cfg until the test ends, and returns once it serves.
func daemonInProcess(t *testing.T, sock, cfg string) *logWatch {
	t.Helper()
	log := &logWatch{}
	env := map[string]string{"MCPGATE_DATABASE_PATH": filepath.Join(t.TempDir(), "db"),
		"MCPGATE_LIMITS_WORKER_START_TIMEOUT": "60s", "MCPGATE_LIMITS_DRAIN_MIN": "1ms"}
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: log, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args := []string{"serve", "--daemon", "--foreground", "--listen", "unix:" + sock}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	go func() { done <- m.Run(ctx, args) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		if t.Failed() {
			t.Logf("daemon log:\n%s", log.String())
		}
	})
	select {
	case <-log.seen(`msg="mcpgate: serving"`):
	case err := <-done:
		t.Fatalf("the daemon ended: %v\n%s", err, log.String())
	}
	return log
}

// socketClient is an HTTP client whose every connection goes to sock.
func socketClient(sock string) *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

// TestLocalTokenRefused: a request carrying a token on the socket is
// refused with 400 and a message that says why, rather than served as the
// peer while the client believes it acts as the token's user.
func TestLocalTokenRefused(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", local.SocketName)
	daemonInProcess(t, sock, "")
	hc := socketClient(sock)
	for _, auth := range []string{"Bearer eyJhbGciOiJub25lIn0.e30.", "DPoP abc", "Basic YTpi"} {
		req, _ := http.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", auth)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", auth, body)
		assert.Contains(t, string(body), "takes no Authorization header")
		assert.NotContains(t, string(body), "eyJ", "the token is not echoed")
	}
	// Without one, the same request is served, as the socket's owner.
	req, _ := http.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// otherAccount creates a local account for the test (removed after it)
// and returns its name, uid and gid.
func otherAccount(t *testing.T, at int) (string, int, int) {
	t.Helper()
	requireRoot(t)
	uid := 460000 + (os.Getpid()%5000)*4 + at
	name := fmt.Sprintf("mcpgl%d", uid)
	out, err := exec.Command("useradd", "--no-create-home", "--uid", strconv.Itoa(uid), "--user-group", name).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	return name, uid, uid
}

// asAccount returns a copy of this test binary that another account can
// run, and an exec.Cmd factory running it as uid.
func asAccount(t *testing.T, uid, gid int) func(args ...string) *exec.Cmd {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "mcpgate")
	src, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, src, 0o755))
	reachable(t, exe)
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(exe, args...)
		cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		return cmd
	}
}

// TestLocalOtherAccount: another local account cannot use a user's
// socket; on a system socket it is refused by its peer credentials
// unless server.unix_allowed_users names it, and then it gets a worker of
// its own, running as it, not the owner's.
func TestLocalOtherAccount(t *testing.T) {
	name, uid, gid := otherAccount(t, 0)
	run := asAccount(t, uid, gid)

	connect := func(t *testing.T, sock string, system bool) (*mcp.ClientSession, *lockedBuffer, error) {
		args := []string{"bridge", "--socket=" + sock, "--no-start"}
		if system {
			args = append(args, "--system")
		}
		var stderr lockedBuffer
		cmd := run(args...)
		cmd.Stderr = &stderr
		client := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		return cs, &stderr, err
	}

	t.Run("a user's socket", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mcpgate")
		sock := filepath.Join(dir, local.SocketName)
		log := daemonInProcess(t, sock, "")
		reachable(t, dir)
		_, stderr, err := connect(t, sock, true)
		require.Error(t, err)
		assert.Regexp(t, "permission denied|may not use this socket", stderr.String())
		assert.NotRegexp(t, workerStarted, log.String())
	})

	system := func(t *testing.T, rules string) (string, *logWatch) {
		dir := filepath.Join(t.TempDir(), "system")
		sock := filepath.Join(dir, local.SocketName)
		cfg := filepath.Join(t.TempDir(), "mcpgate.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte("server:\n  unix_allowed_users:\n"+rules), 0o644))
		log := daemonInProcess(t, sock, cfg)
		reachable(t, sock)
		return sock, log
	}

	t.Run("a system socket that does not name it", func(t *testing.T) {
		sock, log := system(t, "    - user: root\n      read_only: true\n")
		_, stderr, err := connect(t, sock, true)
		require.Error(t, err)
		assert.Contains(t, stderr.String(), fmt.Sprintf("uid %d (%s) may not use this socket", uid, name))
		assert.Contains(t, stderr.String(), "server.unix_allowed_users")
		assert.NotRegexp(t, workerStarted, log.String())
	})

	t.Run("a system socket that names it", func(t *testing.T) {
		sock, log := system(t, "    - user: "+name+"\n      read_only: true\n")
		other, stderr, err := connect(t, sock, true)
		require.NoError(t, err, stderr.String())
		defer other.Close()
		user, otherWorker := status(t, other)
		assert.Equal(t, name, user, "the account's own identity")

		s := &localSetup{sock: sock, env: os.Environ()}
		owner, _ := s.shim(t, "", "--socket="+sock, "--no-start")
		defer owner.Close()
		ownerUser, ownerWorker := status(t, owner)
		assert.Equal(t, "root", ownerUser)
		assert.NotEqual(t, ownerWorker, otherWorker, "a worker each")
		assert.Equal(t, 2, len(workerStarted.FindAllString(log.String(), -1)))
		assert.Regexp(t, `worker started".*user=`+name, log.String())

		// Its rule makes it read-only: a write tool is not even listed.
		tools, err := other.ListTools(context.Background(), nil)
		require.NoError(t, err)
		for _, tl := range tools.Tools {
			assert.NotEqual(t, "execute", tl.Name)
		}
	})
}
