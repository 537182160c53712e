package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rpcError is the error member of a JSON-RPC answer, from a JSON or an SSE
// body.
func rpcAnswer(t *testing.T, body string) map[string]any {
	t.Helper()
	if i := strings.Index(body, "data: "); i >= 0 { // SSE: the last event is the answer
		lines := strings.Split(strings.TrimSpace(body), "\n")
		for j := len(lines) - 1; j >= 0; j-- {
			if d, ok := strings.CutPrefix(lines[j], "data: "); ok {
				body = d
				break
			}
		}
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	return m
}

// TestWorkerOverMemoryLimitDiesAlone: a worker
// that allocates past worker.limits.address_space is stopped by it, its
// call in flight fails with workerExited naming the limit, and a
// neighbour session's worker keeps working. The rlimit is set by the real
// helper (this binary's exec-limited) before the worker's first
// instruction.
func TestWorkerOverMemoryLimitDiesAlone(t *testing.T) {
	// The stub maps about 1.2 GiB of address space at start (Go reserves
	// more than it uses, and more again on a loaded machine, where the
	// runtime starts more threads): 2 GiB leaves it room to start and to
	// take 16 MiB, not to take 3 GiB more.
	stub, err := stubWorker()
	require.NoError(t, err)
	// The stub is the helper here, as mcpgate exec-limited is in
	// production: this test binary may be built with -race, whose shadow
	// memory no address-space limit leaves room for.
	orig := limitHelper
	limitHelper = func() ([]string, error) { return []string{stub, limitHelperCommand}, nil }
	t.Cleanup(func() { limitHelper = orig })
	lg := startLocalGateway(t, map[string]string{"MCPGATE_WORKER_LIMITS_ADDRESS_SPACE": "2GiB"})
	greedy, neighbour := lg.session(t), lg.session(t)

	code, _, body := lg.post(t, greedy, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alloc","arguments":{"size":3221225472}}}`)
	require.Equal(t, http.StatusOK, code, body)
	ans := rpcAnswer(t, body)
	require.Contains(t, ans, "error", "the worker must not get 3 GiB more: %s", body)
	e := ans["error"].(map[string]any)
	assert.EqualValues(t, -32603, e["code"])
	assert.Equal(t, map[string]any{"kind": "workerExited", "limit": "address_space"}, e["data"])
	assert.Contains(t, e["message"], "worker.limits.address_space")

	code, _, body = lg.post(t, neighbour, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "still here")
	assert.NotContains(t, body, `"error"`)
	// And the neighbour may allocate what fits.
	code, _, body = lg.post(t, neighbour, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alloc","arguments":{"size":16777216}}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "allocated 16777216 bytes")

	code, _, _ = lg.post(t, greedy, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	assert.Equal(t, http.StatusNotFound, code, "the killed worker's session is gone")
	assert.Contains(t, lg.log.String(), "worker exited over a limit")
	// The audit event (in the main log: no audit.path) names the limit,
	// and the metrics count the exit as one.
	assert.Regexp(t, `msg=audit event=tools/call .*tool=alloc .*outcome=-32603 .*error_kind=workerExited error_limit=address_space`, lg.log.String())
	assert.Contains(t, lg.metricsText(t), `mcpgate_worker_exits_total{kind="session",reason="limit"} 1`)
}

// TestExecLimitedCommand: mcpgate exec-limited (this test binary) sets the
// limits it is given and execs the program, which sees them.
func TestExecLimitedCommand(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	out, err := exec.Command(exe, limitHelperCommand, "nofile=64", "cpu=90", "--", "/bin/sh", "sh", "-c", "echo $(ulimit -n) $(ulimit -t)").Output()
	require.NoError(t, err)
	assert.Equal(t, "64 90\n", string(out))
}
