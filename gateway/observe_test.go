package gateway

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/worker"
)

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		outcome      string
		code         int
		kind         string
	}{
		{"ok", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, "ok", 0, ""},
		{"tool error kind", `{"jsonrpc":"2.0","id":1,"result":{"isError":true,"structuredContent":{"error":{"kind":"sqlError"}}}}`, "sqlError", 0, ""},
		{"tool error without kind", `{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}`, "toolError", 0, ""},
		{"tool error, structuredContent not an object", `{"jsonrpc":"2.0","id":1,"result":{"isError":true,"structuredContent":[1]}}`, "toolError", 0, ""},
		{"rpc error with kind", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x","data":{"kind":"workerExited"}}}`, "-32603", -32603, "workerExited"},
		{"rpc error, data a string", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x","data":"no"}}`, "-32602", -32602, ""},
		{"cancelled", "", "cancelled", 0, ""},
		{"input required", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`, "inputRequired", 0, ""},
		// What the plain scan cannot read goes to encoding/json, which a
		// worker's answer is held to: no way to hide a tool error.
		{"escaped key", `{"jsonrpc":"2.0","id":1,"result":{"is\u0045rror":true}}`, "toolError", 0, ""},
		{"key in another case", `{"jsonrpc":"2.0","id":1,"result":{"IsError":true}}`, "toolError", 0, ""},
		{"duplicate key, the last wins", `{"jsonrpc":"2.0","id":1,"result":{"isError":false,"isError":true}}`, "toolError", 0, ""},
		{"error key in another case", `{"jsonrpc":"2.0","id":1,"Error":{"code":-32000,"message":"x"}}`, "-32000", -32000, ""},
		{"result not an object", `{"jsonrpc":"2.0","id":1,"result":null}`, "ok", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answer *worker.Answer
			if tc.answer != "" {
				answer = &worker.Answer{Data: []byte(tc.answer)}
			}
			outcome, code, kind := Outcome(answer)
			assert.Equal(t, tc.outcome, outcome)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.kind, kind)
		})
	}
}

// TestOutcomeDeferred: a worker's result whose encoding waits (a rewrite)
// is read from the result itself.
func TestOutcomeDeferred(t *testing.T) {
	outcome, _, _ := Outcome(&worker.Answer{Result: []byte(`{"isError":true,"structuredContent":{"error":{"kind":"conflict"}}}`)})
	assert.Equal(t, "conflict", outcome)
	outcome, _, _ = Outcome(&worker.Answer{Result: []byte(`{"content":[]}`)})
	assert.Equal(t, "ok", outcome)
	outcome, _, _ = Outcome(&worker.Answer{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}`)})
	assert.Equal(t, "inputRequired", outcome)
}

// recorder is an Observer that keeps the events it hears.
type recorder struct {
	NopObserver
	mu     sync.Mutex
	events []CallEvent
}

func (r *recorder) Call(e *CallEvent) {
	r.mu.Lock()
	r.events = append(r.events, *e)
	r.mu.Unlock()
}

func (r *recorder) byID() map[string]CallEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]CallEvent{}
	for _, e := range r.events {
		m[e.RequestID] = e
	}
	return m
}

// TestObserveInputRequired: a 2026-07-28 call that a 2025 worker answers
// with a question is two events: the first request's (inputRequired) and
// the retry's, which carries the call's outcome.
func TestObserveInputRequired(t *testing.T) {
	rec := &recorder{}
	_, url := principalGateway(t, nil, Options{Observers: []Observer{rec}})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	call := func(id, extra string) map[string]any {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"sample","arguments":{"text":"hey"}` + extra + `,` + meta + `}}`
		_, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "sample", "X-Test-User", "alice")
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return m
	}
	res := call("1", "")["result"].(map[string]any)
	require.Equal(t, "input_required", res["resultType"])
	var key string
	for k := range res["inputRequests"].(map[string]any) {
		key = k
	}
	m := call("2", `,"requestState":"`+res["requestState"].(string)+`","inputResponses":{"`+key+`":{"role":"assistant","model":"m","content":{"type":"text","text":"HEY"}}}`)
	require.Equal(t, "sampled: HEY", resultText(m))

	events := rec.byID()
	require.Len(t, events, 2)
	for id, outcome := range map[string]string{"1": OutcomeInputRequired, "2": OutcomeOK} {
		e := events[id]
		assert.Equal(t, outcome, e.Outcome, "request %s", id)
		assert.Equal(t, "sample", e.Tool)
		assert.Equal(t, "alice", e.User)
		assert.Equal(t, WorkerUser, e.WorkerKind)
		assert.NotEmpty(t, e.WorkerKey)
		assert.Empty(t, e.Session)
	}
}

// TestObserveRequestStateOfAnotherCall: a retry that carries one call's
// requestState but names another tool (a state replayed to reach the
// parked call's worker under another name) is refused with 400 before any
// worker, and is an event of its own, decision invalid.
func TestObserveRequestStateOfAnotherCall(t *testing.T) {
	rec := &recorder{}
	_, url := principalGateway(t, nil, Options{Observers: []Observer{rec}})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	call := func(id, tool, extra string) (int, map[string]any) {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hey"}` + extra + `,` + meta + `}}`
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool, "X-Test-User", "alice")
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return resp.StatusCode, m
	}
	_, first := call("1", "sample", "")
	res := first["result"].(map[string]any)
	require.Equal(t, "input_required", res["resultType"])
	status, m := call("2", "echo", `,"requestState":"`+res["requestState"].(string)+`"`)
	require.Equal(t, http.StatusBadRequest, status, "%v", m)

	events := rec.byID()
	require.Len(t, events, 2, "%v", events)
	e := events["2"]
	assert.Equal(t, DecisionInvalid, e.Decision)
	assert.Equal(t, OutcomeRefused, e.Outcome)
	assert.Equal(t, http.StatusBadRequest, e.Status)
	assert.Equal(t, "echo", e.Tool)
	assert.Equal(t, "alice", e.User)
}
