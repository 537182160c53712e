//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireRoot skips a test that switches accounts unless it runs as root;
// with MCPGATE_REQUIRE_ROOT=1 (CI) it fails instead, so that the test
// never goes quietly unrun.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("MCPGATE_REQUIRE_ROOT") == "1" {
		t.Fatal("this test must run as root (MCPGATE_REQUIRE_ROOT=1)")
	}
	t.Skip("switching a worker's account needs root")
}

// reachable opens the directories above path (up to the temporary
// directory) to other accounts, so that a worker under its user's account
// can exec a program a test built there, or reach its data directory.
func reachable(t *testing.T, path string) {
	t.Helper()
	for d := filepath.Dir(path); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
}

// testUIDs returns uids at..at+n-1 of this test process's own block, so
// that tests (each given its own at) and test runs at once use apart uids
// (none of them has a passwd entry).
func testUIDs(at, n int) (first, last int) {
	first = 400000 + (os.Getpid()%5000)*20 + at
	return first, first + n - 1
}

// accountGateway starts the TLS gateway with worker.run_as user over the
// stub worker, its data directory and mapping file under dir.
func accountGateway(t *testing.T, dir string, first, last int, extra map[string]string) *tlsGateway {
	t.Helper()
	stub, err := stubWorker()
	require.NoError(t, err)
	reachable(t, stub)
	env := map[string]string{
		"MCPGATE_WORKER_COMMAND":      stub,
		"MCPGATE_WORKER_RUN_AS":       "user",
		"MCPGATE_WORKER_UID_RANGE":    fmt.Sprintf("%d-%d", first, last),
		"MCPGATE_WORKER_UID_MAP_FILE": filepath.Join(dir, "uids.json"),
		"MCPGATE_WORKER_DATA_DIR":     filepath.Join(dir, "users"),
		"MCPGATE_WORKER_POOL_SIZE":    "0",
		"MCPGATE_AUDIT_LOG":           "true",
		// What these tests prove is the accounts' separation, not the
		// sandbox's (tested on its own): its Landlock rules would refuse
		// the hostile reads whatever the uid. And the limit helper here
		// is this test binary, which only root may execute.
		"MCPGATE_WORKER_SANDBOX_ENABLED": "false",
	}
	for k, v := range extra {
		env[k] = v
	}
	return startTLSGateway(t, env)
}

// open opens a 2025-11-25 session as user: its token and session id, or
// the refusal's status and body.
func (g *tlsGateway) open(t *testing.T, user string) (tok, sid string, code int, body string) {
	t.Helper()
	tok = g.token(t, user, "mcp:use", "mcp:write")
	code, h, body := g.raw(t, tok, "", initBody)
	if code != http.StatusOK {
		return tok, "", code, body
	}
	sid = h.Get("MCP-Session-Id")
	code, _, body = g.raw(t, tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	return tok, sid, http.StatusOK, ""
}

// call calls tool with text on a session and returns the answer's text,
// or its JSON-RPC error message.
func (g *tlsGateway) call(t *testing.T, tok, sid, tool, text string) string {
	t.Helper()
	arg, _ := json.Marshal(text)
	code, _, body := g.raw(t, tok, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"text":`+string(arg)+`}}}`)
	require.Equal(t, http.StatusOK, code, body)
	ans := rpcAnswer(t, body)
	if e, ok := ans["error"].(map[string]any); ok {
		return "error: " + fmt.Sprint(e["message"])
	}
	res, ok := ans["result"].(map[string]any)
	require.True(t, ok, "no result: %s", body)
	return res["content"].([]any)[0].(map[string]any)["text"].(string)
}

// callAs opens a session as user and calls tool with text on it: the
// answer's text, or the refusal's status and body.
func (g *tlsGateway) callAs(t *testing.T, user, tool, text string) (int, string) {
	t.Helper()
	tok, sid, code, body := g.open(t, user)
	if code != http.StatusOK {
		return code, body
	}
	return code, g.call(t, tok, sid, tool, text)
}

var whoami = regexp.MustCompile(`^uid=(\d+) gid=(\d+) dir=(.*)$`)

// TestRunAsUserSeparatesUsers: with worker.run_as user, two users' workers
// run under two uids from the range, each in its own data directory, and
// the one cannot read or write the other's files; a second gateway on the
// same mapping file (a restart, or a replica) gives each the same uid; a
// user id beyond the range, and one that cannot name a directory, are
// refused, audited, and never served under the gateway's account.
func TestRunAsUserSeparatesUsers(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	reachable(t, filepath.Join(dir, "x"))
	first, last := testUIDs(0, 2)
	g := accountGateway(t, dir, first, last, nil)

	ids := map[string]int{}
	for _, u := range []string{"acct-alice", "acct-bob"} {
		_, out := g.callAs(t, u, "whoami", "")
		m := whoami.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		uid, _ := strconv.Atoi(m[1])
		assert.True(t, uid >= first && uid <= last, "%s runs as uid %d, outside %d-%d", u, uid, first, last)
		assert.Equal(t, m[1], m[2], "an account-less uid's group is its own number")
		assert.Equal(t, filepath.Join(dir, "users", u), m[3], "the worker's working directory is its user's data directory")
		fi, err := os.Stat(m[3])
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
		ids[u] = uid
	}
	assert.NotEqual(t, ids["acct-alice"], ids["acct-bob"])

	secret := filepath.Join(dir, "users", "acct-alice", "secret")
	_, out := g.callAs(t, "acct-alice", "writefile", secret)
	require.Equal(t, "wrote", out)
	_, out = g.callAs(t, "acct-alice", "readfile", secret)
	assert.Equal(t, "read: written", out, "a user reads their own files")
	// The hostile user tries the other's directory.
	_, out = g.callAs(t, "acct-bob", "readfile", secret)
	assert.Contains(t, out, "permission denied")
	_, out = g.callAs(t, "acct-bob", "writefile", filepath.Join(dir, "users", "acct-alice", "planted"))
	assert.Contains(t, out, "permission denied")
	_, out = g.callAs(t, "acct-bob", "readfile", filepath.Join(dir, "uids.json"))
	assert.Contains(t, out, "permission denied", "the mapping file is the gateway's")

	// The range (two uids) is full: a third user is refused, not run as
	// the gateway.
	code, body := g.callAs(t, "acct-carol", "whoami", "")
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, `"kind":"noAccount"`)
	assert.Contains(t, g.log.String(), "worker.uid_range "+fmt.Sprintf("%d-%d", first, last)+" is full")
	assert.Regexp(t, `msg=audit event=initialize .*user=acct-carol.*decision=noAccount`, g.log.String())
	// ".." passes the token check (a valid user id) but would name the
	// data directory's parent: refused.
	before, err := os.Stat(dir)
	require.NoError(t, err)
	code, body = g.callAs(t, "..", "whoami", "")
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, `"kind":"noAccount"`)
	after, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, before.Sys().(*syscall.Stat_t).Uid, after.Sys().(*syscall.Stat_t).Uid, "the data directory's parent was handed over")

	// Another gateway on the same mapping gives each user the same uid.
	g2 := accountGateway(t, dir, first, last, nil)
	for u, uid := range ids {
		_, out := g2.callAs(t, u, "whoami", "")
		assert.Equal(t, strconv.Itoa(uid), whoami.FindStringSubmatch(out)[1], "%s keeps their uid", u)
	}
}

// TestRunAsUserProcessLimit: worker.limits.user_processes is RLIMIT_NPROC
// of the user's account: a worker that forks past it is refused
// (EAGAIN), and another user's worker, another account, is not.
func TestRunAsUserProcessLimit(t *testing.T) {
	requireRoot(t)
	stub, err := stubWorker()
	require.NoError(t, err)
	orig := limitHelper
	limitHelper = func() ([]string, error) { return []string{stub, limitHelperCommand}, nil }
	t.Cleanup(func() { limitHelper = orig })
	dir := t.TempDir()
	reachable(t, filepath.Join(dir, "x"))
	first, last := testUIDs(2, 3)
	g := accountGateway(t, dir, first, last, map[string]string{"MCPGATE_WORKER_LIMITS_USER_PROCESSES": "24"})

	tok, sid, code, body := g.open(t, "acct-forker")
	require.Equal(t, http.StatusOK, code, body)
	refused := false
	for range 40 {
		out := g.call(t, tok, sid, "spawn", "")
		if strings.Contains(out, "resource temporarily unavailable") {
			refused = true
			break
		}
		_, err := strconv.Atoi(out)
		require.NoError(t, err, "spawn answered %q", out)
	}
	assert.True(t, refused, "40 processes spawned past a limit of 24")
	_, out := g.callAs(t, "acct-other", "spawn", "")
	_, err = strconv.Atoi(out)
	assert.NoError(t, err, "another user's account has its own count: %q", out)
}

// TestRunAsUserBuiltinSQLite: the built-in worker on SQLite works under
// worker.run_as user: the gateway hands the database and its directory to
// worker.group, and each user's worker, under its own uid, reads and
// writes it.
func TestRunAsUserBuiltinSQLite(t *testing.T) {
	requireRoot(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	reachable(t, exe)
	group := fmt.Sprintf("mcpgt%d", os.Getpid())
	require.NoError(t, exec.Command("groupadd", group).Run())
	t.Cleanup(func() { _ = exec.Command("groupdel", group).Run() })
	dir := t.TempDir()
	reachable(t, filepath.Join(dir, "x"))
	first, last := testUIDs(5, 2)
	g := startTLSGateway(t, map[string]string{
		"MCPGATE_WORKER_RUN_AS":       "user",
		"MCPGATE_WORKER_UID_RANGE":    fmt.Sprintf("%d-%d", first, last),
		"MCPGATE_WORKER_UID_MAP_FILE": filepath.Join(dir, "uids.json"),
		"MCPGATE_WORKER_DATA_DIR":     filepath.Join(dir, "users"),
		"MCPGATE_WORKER_GROUP":        group,
		"MCPGATE_DATABASE_PATH":       filepath.Join(dir, "db", "mcpgate.db"),
		"MCPGATE_AUDIT_LOG":           "true",
	})
	for i, u := range []string{"acct-dora", "acct-eve"} {
		tok := g.token(t, u, "mcp:use", "mcp:write")
		cs := g.connect(t, &tok)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_sql",
			Arguments: map[string]any{"sql": fmt.Sprintf("INSERT INTO customers (name, email) VALUES ('n%d', 'e%d@example.com')", i, i)}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %v", u, res.Content)
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query",
			Arguments: map[string]any{"sql": fmt.Sprintf("SELECT email FROM customers WHERE name = 'n%d'", i)}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %v", u, res.Content)
		assert.Contains(t, fmt.Sprint(res.Content[0]), fmt.Sprintf("e%d@example.com", i))
	}
	// The range is full: a third user's 2026-07-28 request is refused
	// with noAccount and audited, its per-user worker never started.
	code, _, body := g.rawModern(t, g.token(t, "acct-fay", "mcp:use"), "query", `{"sql":"SELECT 1"}`)
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, `"kind":"noAccount"`)
	assert.Regexp(t, `msg=audit event=tools/call .*user=acct-fay.*decision=noAccount`, g.log.String())
	// Two accounts served them.
	out, err := os.ReadFile(filepath.Join(dir, "uids.json"))
	require.NoError(t, err)
	assert.Contains(t, string(out), `"acct-dora": `+strconv.Itoa(first))
	assert.Contains(t, string(out), `"acct-eve": `+strconv.Itoa(first+1))
}

// TestRunAsNeedsCapabilities: a gateway without CAP_SETUID, CAP_SETGID and
// CAP_CHOWN and CAP_KILL (here: serve run as nobody) refuses to start with
// worker.run_as user, saying what it lacks, rather than serve workers it
// cannot switch.
func TestRunAsNeedsCapabilities(t *testing.T) {
	requireRoot(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	reachable(t, exe)
	dir := t.TempDir()
	reachable(t, filepath.Join(dir, "x"))
	require.NoError(t, os.Chmod(dir, 0o777))
	cmd := exec.Command(exe, "serve")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MCPGATE_SERVER_LISTEN=127.0.0.1:0", "MCPGATE_METRICS_LISTEN=127.0.0.2:0",
		"MCPGATE_WORKER_COMMAND=/bin/cat", "MCPGATE_WORKER_RUN_AS=user", "MCPGATE_WORKER_DATA_DIR=" + filepath.Join(dir, "users")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "serve started without the capabilities: %s", out)
	assert.Contains(t, string(out), "worker.run_as user: worker: the gateway cannot start workers under other accounts: it lacks CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL")
}

// TestRunAsUserUnprivilegedGateway: a gateway that is not root and holds
// its capabilities as ambient ones (what the systemd drop-in gives it)
// starts a user's worker under the user's uid with no capability left in
// any set, the ambient and inheritable ones included: a worker that
// inherited CAP_SETUID could become anyone. The gateway is the real binary
// built as make build builds it (CGO_ENABLED=0), run as nobody.
func TestRunAsUserUnprivilegedGateway(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	reachable(t, filepath.Join(dir, "x"))
	require.NoError(t, os.Chmod(dir, 0o777))
	bin := filepath.Join(dir, "mcpgate")
	build := exec.Command("go", "build", "-o", bin, "github.com/mcpgate/mcpgate/cmd/mcpgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	stub, err := stubWorker()
	require.NoError(t, err)
	reachable(t, stub)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	first, last := testUIDs(7, 1)
	// The mapping file and the data directories live in a directory of
	// the gateway's account, closed to others (dir is open to all).
	state := filepath.Join(dir, "state")
	require.NoError(t, os.Mkdir(state, 0o711))
	require.NoError(t, os.Chown(state, 65534, 65534))
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MCPGATE_SERVER_LISTEN=" + addr, "MCPGATE_METRICS_LISTEN=127.0.0.2:0",
		"MCPGATE_SERVER_LOCAL_USER=acct-amb", "MCPGATE_WORKER_COMMAND=" + stub, "MCPGATE_WORKER_POOL_SIZE=0",
		"MCPGATE_WORKER_RUN_AS=user", fmt.Sprintf("MCPGATE_WORKER_UID_RANGE=%d-%d", first, last),
		"MCPGATE_WORKER_UID_MAP_FILE=" + filepath.Join(state, "uids.json"), "MCPGATE_WORKER_DATA_DIR=" + filepath.Join(state, "users")}
	const capChown, capKill, capSetgid, capSetuid = 0, 5, 6, 7
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}},
		AmbientCaps: []uintptr{capChown, capKill, capSetgid, capSetuid}}
	log := &logWatch{}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	done := make(chan struct{})
	go func() { exited <- cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.String())
		}
	})
	select {
	case <-log.seen(`msg="mcpgate: serving" `):
	case err := <-exited:
		t.Fatalf("serve ended: %v\n%s", err, log.String())
	case <-time.After(time.Minute):
		t.Fatalf("serve did not start within a minute\n%s", log.String())
	}
	gw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	require.NoError(t, err)
	assert.Contains(t, string(gw), "CapEff:\t00000000000000e1", "the gateway keeps what it needs")
	assert.Contains(t, string(gw), "CapAmb:\t0000000000000000", "the gateway's ambient set is emptied")

	lg := &localGateway{url: "http://" + addr}
	sid := lg.session(t)
	code, _, body := lg.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"readfile","arguments":{"text":"/proc/self/status"}}}`)
	require.Equal(t, http.StatusOK, code, body)
	status := rpcAnswer(t, body)["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	uid := strconv.Itoa(first)
	assert.Contains(t, status, "Uid:\t"+uid+"\t"+uid+"\t"+uid+"\t"+uid)
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		assert.Contains(t, status, set+":\t0000000000000000", "the worker holds capabilities")
	}

	// The gateway can still end what the worker started under the
	// user's uid (CAP_KILL): a child left in the worker's group when the
	// session ends is killed with it.
	code, _, body = lg.post(t, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"spawn","arguments":{}}}`)
	require.Equal(t, http.StatusOK, code, body)
	child, err := strconv.Atoi(rpcAnswer(t, body)["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string))
	require.NoError(t, err, body)
	req, err := http.NewRequest(http.MethodDelete, lg.url+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("MCP-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	// Nothing announces the child's end to this process (it is not its
	// parent): look until it is gone or the stop grace has long passed.
	deadline := time.Now().Add(30 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.False(t, alive(child), "the worker's child (pid %d) outlived its session", child)
}

// alive reports whether pid names a process that has not exited (a
// zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
