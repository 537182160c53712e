package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// TestPrestartedWorkerReadiesSandboxBeforeIdentity: a pre-started built-in
// worker with the sandbox makes it ready while it waits for its identity
// (the Landlock rule set open, no_new_privs on every thread) and confines
// nothing yet (no seccomp filter); its identity then only enforces it, and
// the session is served confined.
func TestPrestartedWorkerReadiesSandboxBeforeIdentity(t *testing.T) {
	if sandbox.Probe().LandlockABI == 0 || !sandbox.Probe().Seccomp {
		t.Skip("the kernel lacks Landlock or seccomp")
	}
	bin, err := releaseBinaries()
	require.NoError(t, err)
	own := seccompFilters(t, "self")
	cmd := exec.Command(filepath.Join(bin, "mcpgate-worker"))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), workerproto.EnvPrestarted + "=true",
		sandbox.EnvSpec + "=" + (sandbox.Spec{Profile: sandbox.ProfileBuiltin}).Encode()},
		(&db.Config{Driver: db.SQLite, DSN: filepath.Join(t.TempDir(), "data", "w.db")}).Environ()...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	outPipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)

	deadline := time.Now().Add(30 * time.Second)
	for !(hasRulesetFD(pid) && statusField(pid, "NoNewPrivs") == "1") {
		if time.Now().After(deadline) {
			t.Fatalf("no Landlock rule set and no_new_privs in the waiting worker (NoNewPrivs %s)", statusField(pid, "NoNewPrivs"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, own, seccompFilters(t, pid), "confined before its identity came")

	id := workerproto.Identity{User: "alice", SessionID: "s1", Scope: workerproto.ScopeSession}
	_, err = in.Write(append(append(id.Line(), '\n'), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`+"\n"...))
	require.NoError(t, err)
	out := bufio.NewReader(outPipe)
	_, err = out.ReadBytes('\n')
	require.NoError(t, err)
	line, err := out.ReadBytes('\n')
	require.NoError(t, err)
	assert.Contains(t, string(line), `"user":"alice"`)
	assert.NotContains(t, string(line), `"isError":true`)
	assert.Greater(t, seccompFilters(t, pid), own, "the session is served unconfined")
	assert.False(t, hasRulesetFD(pid), "the rule set's fd stays open in the session")
}

// hasRulesetFD reports whether process pid holds a Landlock rule set fd.
func hasRulesetFD(pid string) bool {
	fds, _ := filepath.Glob("/proc/" + pid + "/fd/*")
	for _, fd := range fds {
		if l, _ := os.Readlink(fd); strings.Contains(l, "landlock-ruleset") {
			return true
		}
	}
	return false
}

// statusField is a field of /proc/pid/status, or "".
func statusField(pid, name string) string {
	status, _ := os.ReadFile("/proc/" + pid + "/status")
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
