package audit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/metrics"
)

// counters scrapes mx and returns the series of the counter name that have
// counted something, by their labels joined as "k=v,k=v" in label order.
func counters(t *testing.T, mx *metrics.Metrics, name string) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	mx.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		k := ""
		for i, l := range m.GetLabel() {
			if i > 0 {
				k += ","
			}
			k += l.GetName() + "=" + l.GetValue()
		}
		if v := m.GetCounter().GetValue(); v != 0 {
			out[k] = v
		}
	}
	return out
}

// policies: mcp:use grants echo, mcp:admin grants write as well; nothing
// grants crash.
var policies = []auth.Rule{
	{Scope: "mcp:use", Tools: []string{"echo"}},
	{Scope: "mcp:admin", Tools: []string{"echo", "write"}},
}

// TestRefusalsRecorded: every kind of refusal of a tools/call is one audit
// line and one count of mcpgate_refusals_total, on a 2025-11-25 session and
// on a 2026-07-28 request alike: the read-only rules (a gated tool, a name
// nobody listed), the write scope's step-up challenge, a policy's step-up
// challenge, and a tool no policy grants.
func TestRefusalsRecorded(t *testing.T) {
	simple := auth.Options{WriteScope: "mcp:write"}
	policy := auth.Options{Policies: policies}
	cases := []struct {
		name    string
		auth    auth.Options
		gateway gateway.Options
		scopes  []string
		tool    string
		// what the client gets: the HTTP status on a session, on a
		// 2026-07-28 request, and the JSON-RPC error's data.kind (none for
		// a challenge)
		status2025, status2026 int
		kind                   string
		decision, reason       string
		outcome                string // the mcpgate_tool_calls_total outcome
		toolLabel              string
	}{
		{name: "read-only gateway", auth: simple, gateway: gateway.Options{ReadOnly: true, SafeTools: []string{"echo"}},
			scopes: []string{"mcp:use", "mcp:write"}, tool: "write",
			status2025: http.StatusOK, status2026: http.StatusNotFound, kind: "readOnly",
			decision: "readOnly", reason: "readOnly", outcome: "readOnly", toolLabel: "other"},
		{name: "unknown tool, read-only", auth: simple, gateway: gateway.Options{ReadOnly: true, SafeTools: []string{"echo"}},
			scopes: []string{"mcp:use", "mcp:write"}, tool: "nosuchtool",
			status2025: http.StatusOK, status2026: http.StatusNotFound, kind: "readOnly",
			decision: "readOnly", reason: "readOnly", outcome: "readOnly", toolLabel: "other"},
		{name: "write scope step-up", auth: simple, gateway: gateway.Options{SafeTools: []string{"echo"}},
			scopes: []string{"mcp:use"}, tool: "write",
			status2025: http.StatusForbidden, status2026: http.StatusForbidden,
			decision: "readOnly", reason: "readOnly", outcome: "refused", toolLabel: "other"},
		{name: "policy step-up", auth: policy, gateway: gateway.Options{SafeTools: []string{"echo"}},
			scopes: []string{"mcp:use"}, tool: "write",
			status2025: http.StatusForbidden, status2026: http.StatusForbidden,
			decision: "policy", reason: "policy", outcome: "refused", toolLabel: "other"},
		{name: "tool no policy grants", auth: policy, gateway: gateway.Options{SafeTools: []string{"echo"}},
			scopes: []string{"mcp:use"}, tool: "crash",
			status2025: http.StatusOK, status2026: http.StatusNotFound, kind: "forbidden",
			decision: "policy", reason: "policy", outcome: "-32601", toolLabel: "other"},
	}
	for _, c := range cases {
		for _, gen := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(c.name+"/"+gen, func(t *testing.T) {
				tr := newTrailAuth(t, c.auth, c.gateway, audit.Options{})
				tok := tr.token(t, "erin", c.scopes...)
				var (
					resp *http.Response
					ans  map[string]any
					want = c.status2026
					kind = "user"
					sid  string
				)
				if gen == "2025-11-25" {
					sid, want, kind = tr.open(t, tok), c.status2025, "session"
					resp, ans = tr.post(t, tok, sid, call("x1", c.tool, map[string]any{"sql": "delete from t"}))
				} else {
					resp, ans = tr.modernPost(t, tok, "x1", c.tool, map[string]any{"sql": "delete from t"})
				}
				require.Equal(t, want, resp.StatusCode, "%v", ans)
				if c.kind != "" {
					require.NotNil(t, ans["error"], "%v", ans)
					assert.Equal(t, c.kind, ans["error"].(map[string]any)["data"].(map[string]any)["kind"])
				}

				lines, raw := events(t, tr.path)
				e := byRequest(t, lines, "x1")
				assert.Equal(t, "erin", e["user"])
				assert.Equal(t, "tools/call", e["event"])
				assert.Equal(t, c.tool, e["tool"])
				assert.Equal(t, kind, e["worker_kind"])
				assert.Equal(t, c.decision, e["decision"], raw)
				if c.kind == "" {
					assert.Equal(t, "refused", e["outcome"])
					assert.Equal(t, float64(http.StatusForbidden), e["status"])
				} else {
					assert.Equal(t, c.kind, e["error_kind"])
				}
				assert.NotContains(t, raw, tok)

				assert.Equal(t, map[string]float64{"reason=" + c.reason: 1}, counters(t, tr.mx, "mcpgate_refusals_total"))
				assert.Equal(t, map[string]float64{"outcome=" + c.outcome + ",tool=" + c.toolLabel: 1},
					counters(t, tr.mx, "mcpgate_tool_calls_total"))
			})
		}
	}
}

// TestSessionRightsRecorded: a tool the token grants but its read-write
// session was not started with (2025-11-25 only: a 2026-07-28 request gets
// a worker of its token's rights) is refused, recorded and counted as a
// policy refusal.
func TestSessionRightsRecorded(t *testing.T) {
	tr := newTrailAuth(t, auth.Options{Policies: []auth.Rule{
		{Scope: "mcp:use", Tools: []string{"echo", "write"}},
		{Scope: "mcp:admin", Tools: []string{"crash"}},
	}}, gateway.Options{SafeTools: []string{"echo"}}, audit.Options{})
	sid := tr.open(t, tr.token(t, "erin", "mcp:use"))
	resp, ans := tr.post(t, tr.token(t, "erin", "mcp:use", "mcp:admin"), sid, call("x1", "crash", nil))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotNil(t, ans["error"], "%v", ans)
	lines, raw := events(t, tr.path)
	e := byRequest(t, lines, "x1")
	assert.Equal(t, "policy", e["decision"], raw)
	assert.Equal(t, "sessionRights", e["error_kind"])
	assert.Equal(t, map[string]float64{"reason=policy": 1}, counters(t, tr.mx, "mcpgate_refusals_total"))
}

// TestStepUpRefusedWhileDrainingRecorded: a session's step-up to a token
// with more rights needs a new worker; while the gateway drains it is
// refused with 503, recorded and counted as the limit it is (as a new
// per-user worker's refusal is).
func TestStepUpRefusedWhileDrainingRecorded(t *testing.T) {
	tr := newTrail(t, gateway.Options{SafeTools: []string{"echo"}}, audit.Options{})
	sid := tr.open(t, tr.token(t, "erin", "mcp:use")) // a read-only worker
	require.NoError(t, tr.g.Drain(context.Background()))
	resp, _ := tr.post(t, tr.token(t, "erin", "mcp:use", "mcp:write"), sid, call("x1", "write", nil))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	lines, raw := events(t, tr.path)
	e := byRequest(t, lines, "x1")
	assert.Equal(t, "limit", e["decision"], raw)
	assert.Equal(t, float64(http.StatusServiceUnavailable), e["status"])
	assert.Equal(t, map[string]float64{"reason=503": 1}, counters(t, tr.mx, "mcpgate_refusals_total"))
}

// TestHeaderMismatchRecorded: a 2026-07-28 tools/call whose Mcp-Name (or
// Mcp-Param-*) header says another thing than its body (a name smuggled
// past a proxy that routes or filters on the header) is refused before a
// worker, and is still one audit line, decision "invalid", status 400 and
// the -32020 code, counted in mcpgate_tool_calls_total.
func TestHeaderMismatchRecorded(t *testing.T) {
	tr := newTrail(t, gateway.Options{SafeTools: []string{"echo"}}, audit.Options{})
	tok := tr.token(t, "erin", "mcp:use", "mcp:write")
	body := `{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"write","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, ans := tr.send(t, tok, body, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%v", ans)

	lines, raw := events(t, tr.path)
	e := byRequest(t, lines, "h1")
	assert.Equal(t, "erin", e["user"])
	assert.Equal(t, "write", e["tool"], "the tool the body names, the one a worker would run")
	assert.Equal(t, "invalid", e["decision"], raw)
	assert.Equal(t, float64(http.StatusBadRequest), e["status"])
	assert.Equal(t, float64(-32020), e["error_code"])
	assert.Equal(t, "refused", e["outcome"])
	assert.Equal(t, map[string]float64{"outcome=refused,tool=other": 1}, counters(t, tr.mx, "mcpgate_tool_calls_total"))
}
