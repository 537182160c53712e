package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubWorker builds the gateway tests' stub stdio MCP server once.
var stubWorker = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpgate-stub-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "stubworker")
	out, err := exec.Command("go", "build", "-o", path, "github.com/mcpgate/mcpgate/worker/internal/stubworker").CombinedOutput()
	if err != nil {
		return "", &buildError{err, string(out)}
	}
	return path, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "building the stub worker: " + e.err.Error() + "\n" + e.out
}

// logWatch is a log that tells when a line containing a string appears.
type logWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits map[string]chan struct{}
}

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := l.buf.Write(p)
	for s, ch := range l.waits {
		if strings.Contains(l.buf.String(), s) {
			close(ch)
			delete(l.waits, s)
		}
	}
	return n, nil
}

func (l *logWatch) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// seen returns a channel closed once the log holds s.
func (l *logWatch) seen(s string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(l.buf.String(), s) {
		close(ch)
		return ch
	}
	if l.waits == nil {
		l.waits = map[string]chan struct{}{}
	}
	l.waits[s] = ch
	return ch
}

// localGateway is `mcpgate serve` in the localhost mode, in-process, on
// the stub worker.
type localGateway struct {
	url    string // http://127.0.0.1:port
	log    *logWatch
	cancel context.CancelFunc // the first SIGTERM
	hurry  chan struct{}      // closing it is the second
	done   chan error         // Run's result
}

func startLocalGateway(t *testing.T, env map[string]string) *localGateway {
	t.Helper()
	stub, err := stubWorker()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	full := map[string]string{
		"MCPGATE_SERVER_LISTEN":               addr,
		"MCPGATE_WORKER_COMMAND":              stub,
		"MCPGATE_LIMITS_WORKER_START_TIMEOUT": "60s",
		// No load balancer waits to notice the drain of a test's gateway.
		"MCPGATE_LIMITS_DRAIN_MIN": "1ms",
		// Not the default 127.0.0.1:9464: tests run side by side.
		"MCPGATE_METRICS_LISTEN": "127.0.0.1:0",
		// The stub worker runs confined, as any worker.command does; its
		// FIFOs and call logs are in the tests' temporary directories.
		"MCPGATE_WORKER_SANDBOX_WRITE_PATHS": os.TempDir(),
	}
	for k, v := range env {
		full[k] = v
	}
	lg := &localGateway{url: "http://" + addr, log: &logWatch{}, hurry: make(chan struct{}), done: make(chan error, 1)}
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: lg.log, Getenv: func(k string) string { return full[k] }, Hurry: lg.hurry}
	ctx, cancel := context.WithCancel(context.Background())
	lg.cancel = cancel
	go func() { lg.done <- m.Run(ctx, []string{"serve"}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-lg.done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not return after its context was cancelled")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", lg.log.String())
		}
	})
	select {
	case <-lg.log.seen(`msg="mcpgate: serving" `): // not "serving metrics", logged first
	case err := <-lg.done:
		t.Fatalf("serve ended early: %v\n%s", err, lg.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the gateway did not serve within 60s\n%s", lg.log.String())
	}
	return lg
}

// post sends one JSON-RPC message to /mcp.
func (lg *localGateway) post(t *testing.T, sid, body string) (int, http.Header, string) {
	t.Helper()
	code, h, b, err := lg.postE(sid, body)
	require.NoError(t, err)
	return code, h, b
}

// postE is post for a goroutine other than the test's.
func (lg *localGateway) postE(sid, body string) (int, http.Header, string, error) {
	req, err := http.NewRequest(http.MethodPost, lg.url+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("MCP-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

// answer is an HTTP answer that arrives on a channel.
type answer struct {
	code int
	body string
	err  error
}

// slowCall starts a tools/call of the stub's await on session sid and
// returns once the worker runs it: opening the FIFO for writing returns
// only when the worker has it open for reading. Writing to release and
// closing it lets the call answer, on the channel.
func (lg *localGateway) slowCall(t *testing.T, sid string) (release *os.File, answers <-chan answer) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "release")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	ch := make(chan answer, 1)
	go func() {
		code, _, body, err := lg.postE(sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"await","arguments":{"text":"`+fifo+`"}}}`)
		ch <- answer{code, body, err}
	}()
	release, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { release.Close() })
	return release, ch
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// session opens a session and returns its id.
func (lg *localGateway) session(t *testing.T) string {
	t.Helper()
	code, h, body := lg.post(t, "", initBody)
	require.Equal(t, http.StatusOK, code, body)
	sid := h.Get("MCP-Session-Id")
	require.NotEmpty(t, sid)
	code, _, body = lg.post(t, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	return sid
}

// await waits for a log line, or fails the test if serve ends or a minute
// passes first.
func (lg *localGateway) await(t *testing.T, line string) {
	t.Helper()
	select {
	case <-lg.log.seen(line):
	case err := <-lg.done:
		lg.done <- err
		t.Fatalf("serve returned (%v) before logging %q", err, line)
	case <-time.After(time.Minute):
		t.Fatalf("no %q in the log within a minute", line)
	}
}

func (lg *localGateway) get(t *testing.T, path string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(lg.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestDrainLetsSlowCallFinish: SIGTERM during a slow
// call; /readyz turns 503, a new initialize gets 503 with Retry-After, the
// call completes, and the program exits on its own long before
// limits.drain_timeout.
func TestDrainLetsSlowCallFinish(t *testing.T) {
	lg := startLocalGateway(t, map[string]string{"MCPGATE_LIMITS_DRAIN_TIMEOUT": "10m"})
	code, _, body := lg.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "ready\n", body)

	release, slow := lg.slowCall(t, lg.session(t))

	lg.cancel() // SIGTERM
	lg.await(t, "gateway: draining")

	code, _, body = lg.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not ready\n", body, "the probe says nothing more")
	code, _, _ = lg.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code, "alive while draining")
	code, h, body := lg.post(t, "", initBody)
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.NotEmpty(t, h.Get("Retry-After"))
	assert.Contains(t, body, "draining")
	select {
	case a := <-slow:
		t.Fatalf("the slow call ended before it was released: %d %s", a.code, a.body)
	case err := <-lg.done:
		t.Fatalf("serve returned with a call in flight: %v", err)
	default:
	}

	_, err := release.WriteString("go")
	require.NoError(t, err)
	require.NoError(t, release.Close())
	a := <-slow
	require.NoError(t, a.err)
	assert.Equal(t, http.StatusOK, a.code)
	assert.Contains(t, a.body, "released")
	assert.NotContains(t, a.body, "error")
	select {
	case err := <-lg.done:
		require.NoError(t, err)
		lg.done <- err // for the cleanup
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not exit after the drain (the drain timeout is 10m)")
	}
	assert.Contains(t, lg.log.String(), "gateway: drained: no call in flight")
}

// TestSecondSignalStopsAtOnce: a second SIGTERM ends the drain; the call
// in flight is failed rather than waited for.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	lg := startLocalGateway(t, map[string]string{"MCPGATE_LIMITS_DRAIN_TIMEOUT": "10m"})
	_, slow := lg.slowCall(t, lg.session(t))

	lg.cancel()
	lg.await(t, "gateway: draining")
	close(lg.hurry)
	select {
	case err := <-lg.done:
		require.NoError(t, err)
		lg.done <- err
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not stop after the second signal")
	}
	assert.Contains(t, (<-slow).body, "shutting down", "the call in flight is failed, not waited for")
	assert.Contains(t, lg.log.String(), "drain ended before every call finished")
}

// TestProbesRefuseOtherMethods: the probes are read-only and small.
func TestProbesRefuseOtherMethods(t *testing.T) {
	lg := startLocalGateway(t, nil)
	code, _, body := lg.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	resp, err := http.Post(lg.url+"/readyz", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	code, _, _ = lg.get(t, "/readyz/x")
	assert.Equal(t, http.StatusNotFound, code)
}

// TestSIGTERMTwiceSubprocess drives main's signal handling in a real
// process (this test binary as mcpgate): the first SIGTERM drains, the
// second stops at once, and the process exits 0.
func TestSIGTERMTwiceSubprocess(t *testing.T) {
	stub, err := stubWorker()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()

	cmd := exec.Command(exe, "serve")
	cmd.Env = append(os.Environ(), "MCPGATE_SERVER_LISTEN="+addr, "MCPGATE_WORKER_COMMAND="+stub,
		"MCPGATE_LIMITS_DRAIN_TIMEOUT=10m", "MCPGATE_LIMITS_DRAIN_MIN=1ms", "MCPGATE_LIMITS_WORKER_START_TIMEOUT=60s",
		"MCPGATE_METRICS_LISTEN=127.0.0.1:0",               // not the default 9464: tests run side by side
		"MCPGATE_WORKER_SANDBOX_WRITE_PATHS="+os.TempDir()) // the stub's FIFO, as in startLocalGateway
	log := &logWatch{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.String())
		}
	})
	lg := &localGateway{url: "http://" + addr, log: log, done: make(chan error, 1)}
	wait := func(line string) {
		t.Helper()
		select {
		case <-log.seen(line):
		case err := <-exited:
			exited <- err
			t.Fatalf("mcpgate exited (%v) before logging %q", err, line)
		case <-time.After(time.Minute):
			t.Fatalf("no %q in the log within a minute", line)
		}
	}
	wait(`msg="mcpgate: serving" `) // not "serving metrics", logged first

	_, slow := lg.slowCall(t, lg.session(t))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wait("gateway: draining")
	code, _, _ := lg.post(t, "", initBody)
	assert.Equal(t, http.StatusServiceUnavailable, code)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err
		require.NoError(t, err, "exit status")
	case <-time.After(2 * time.Minute):
		t.Fatal("mcpgate did not exit after the second SIGTERM")
	}
	assert.Contains(t, (<-slow).body, "shutting down")
	assert.Contains(t, log.String(), "asked again to stop")
}
