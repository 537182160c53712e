package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeAuditAndMetrics: through mcpgate serve,
// a user's write with the built-in worker is one line in audit.path with
// every field, and the metrics listener counts it.
func TestServeAuditAndMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	g := startTLSGateway(t, map[string]string{"MCPGATE_AUDIT_PATH": path})
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	cs := g.connect(t, &tok)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_sql",
		Arguments: map[string]any{"sql": "UPDATE customers SET name = name WHERE id = 1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var calls []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var e map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		if e["tool"] == "execute_sql" {
			calls = append(calls, e)
		}
	}
	require.Len(t, calls, 1, string(data))
	e := calls[0]
	// The go-sdk client at defaults speaks 2026-07-28: no session, the
	// user's worker.
	require.Empty(t, cs.ID())
	assert.Regexp(t, `^u-[0-9a-f]{32}$`, e["worker_key"])
	for k, want := range map[string]any{
		"event": "tools/call", "user": "alice", "client_id": "mcp-client", "issuer": g.issuer.URL,
		"session": "", "worker_kind": "user", "read_only": false,
		"decision": "allowed", "outcome": "ok",
	} {
		assert.Equal(t, want, e[k], "field %s", k)
	}
	for _, k := range []string{"time", "worker_pid", "duration_ms", "request_id"} {
		assert.NotEmpty(t, e[k], "field %s", k)
	}
	assert.NotContains(t, e, "arguments", "arguments are off by default")
	assert.NotContains(t, string(data), tok[strings.LastIndexByte(tok, '.')+1:])

	addr := regexp.MustCompile(`serving metrics" url=(http://\S+/metrics)`).FindStringSubmatch(g.log.String())
	require.NotNil(t, addr, "no metrics listener in the log:\n%s", g.log.String())
	resp, err := http.Get(addr[1])
	require.NoError(t, err)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	var n float64
	for _, m := range fams["mcpgate_tool_calls_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["tool"] == "execute_sql" && labels["outcome"] == "ok" {
			n = m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, 1.0, n)
}
