package gateway

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
)

// A three-tier example policy on the stub worker, an external
// worker that ignores MCPGATE_WORKER_TOOLS, so the gateway alone holds the
// line: readers get echo, developers echo and write (scope mcp:develop),
// admins pid too (Keycloak realm role mcp-admin: no scope grants it).
var tierRules = []auth.Rule{
	{Scope: "mcp:read", Tools: []string{"echo"}},
	{Scope: "mcp:develop", Tools: []string{"echo", "write"}},
	{Claim: "realm_access.roles", Values: []string{"mcp-admin"}, Tools: []string{"echo", "write", "pid"}},
}

var (
	readerScopes    = []string{"mcp:use", "mcp:read"}
	developerScopes = []string{"mcp:use", "mcp:read", "mcp:develop"}
)

// newPolicyGateway serves the stub worker behind the tier policy; echo is
// the only read-only-safe tool. It returns the file of tool runs.
func newPolicyGateway(t *testing.T) (*authedGateway, string) {
	t.Helper()
	ran := filepath.Join(t.TempDir(), "ran")
	a := newAuthedGatewayWith(t, auth.Options{RequiredScopes: []string{"mcp:use"}, Policies: tierRules},
		Options{SafeTools: []string{"echo"}}, worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + ran, "STUB_NAIVE=1"}})
	return a, ran
}

func admin(c map[string]any) { c["realm_access"] = map[string]any{"roles": []string{"mcp-admin"}} }

// TestPolicyReaderCannotReachWriteTool (hostile): a reader's token
// reaches no tool outside its grant by any spelling of the method, the
// name or the message: without the policy every case runs write.
func TestPolicyReaderCannotReachWriteTool(t *testing.T) {
	a, ran := newPolicyGateway(t)
	tok := a.token(t, "alice", readerScopes, nil)
	sid := a.open(t, tok)

	_, body := a.do(t, http.MethodPost, sid, tok, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	assert.Contains(t, body, `"echo"`)
	for _, hidden := range []string{`"write"`, `"pid"`, `"sleep"`} {
		assert.NotContains(t, body, hidden, "a reader's tools/list")
	}

	tricks := []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"Tools/Call","params":{"name":"write"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","Name":"echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"NAME":"echo","name":"write"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"write"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wr\u0069te"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep"}}`,
	}
	for _, body := range tricks {
		resp, got := a.do(t, http.MethodPost, sid, tok, body)
		assert.NotContains(t, got, `"result"`, "%s: %d %s", body, resp.StatusCode, got)
	}
	// A batch (2025-03-26) cannot carry it past the check either.
	resp, got := rawDo(t, http.MethodPost, a.url, `[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write"}}]`,
		sidHdr, sid, protoHdr, "2025-03-26", "Authorization", "Bearer "+tok)
	assert.NotContains(t, got, `"result"`, "batch: %d %s", resp.StatusCode, got)

	a.do(t, http.MethodPost, sid, tok, toolCall("echo"))
	assert.Equal(t, "echo", ranTools(t, ran), "the worker ran only the granted tool")
}

// TestPolicyStepUpChallenge: a reader's call of a tool the
// developer scope grants is answered 403 insufficient_scope naming the
// scopes to ask for; a tool only a role grants keeps a JSON-RPC refusal.
func TestPolicyStepUpChallenge(t *testing.T) {
	a, ran := newPolicyGateway(t)
	tok := a.token(t, "alice", readerScopes, nil)
	sid := a.open(t, tok)

	resp, body := a.do(t, http.MethodPost, sid, tok, toolCall("write"))
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	ch := resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, ch, `error="insufficient_scope"`)
	assert.Contains(t, ch, `scope="mcp:use mcp:read mcp:develop"`, "held scopes, then the granting one")
	assert.Contains(t, ch, `resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`)

	dtok := a.token(t, "alice", developerScopes, nil)
	_, body = a.do(t, http.MethodPost, sid, dtok, toolCall("pid"))
	assert.Contains(t, body, `"kind":"forbidden"`, "an admin-only tool, to a developer")
	assert.Empty(t, ranTools(t, ran))
}

// TestPolicyStepDownOnDeveloperSession (hostile): a reader's
// token on a session a developer token opened cannot run developer tools,
// nor see them; the developer token still can.
func TestPolicyStepDownOnDeveloperSession(t *testing.T) {
	a, ran := newPolicyGateway(t)
	dtok := a.token(t, "alice", developerScopes, nil)
	rtok := a.token(t, "alice", readerScopes, nil)
	sid := a.open(t, dtok)

	_, body := a.do(t, http.MethodPost, sid, rtok, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	assert.NotContains(t, body, `"write"`, "the reader's list on a developer session")
	resp, body := a.do(t, http.MethodPost, sid, rtok, toolCall("write"))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	resp, body = a.do(t, http.MethodPost, sid, rtok, strings.Replace(toolCall("write"), "tools/call", "TOOLS/CALL", 1))
	assert.NotContains(t, body, `"result"`, "%d %s", resp.StatusCode, body)

	_, body = a.do(t, http.MethodPost, sid, dtok, toolCall("write"))
	assert.Contains(t, body, "written")
	assert.Equal(t, "write", ranTools(t, ran), "only the developer's write ran")

	// An admin's token on the developer's session gets no admin tool: the
	// session's worker was started with the developer's rights.
	atok := a.token(t, "alice", developerScopes, admin)
	_, body = a.do(t, http.MethodPost, sid, atok, toolCall("pid"))
	assert.Contains(t, body, `"kind":"sessionRights"`)
}

// TestPolicyStepUpInPlace: the client that got the 403 comes
// back on the same session with a developer token and the call runs: the
// session's read-only worker is replaced by one with the developer's
// rights, and the session id stays. A reader's token on it afterwards
// still cannot write (step-down after step-up).
func TestPolicyStepUpInPlace(t *testing.T) {
	a, ran := newPolicyGateway(t)
	rtok := a.token(t, "alice", readerScopes, nil)
	dtok := a.token(t, "alice", developerScopes, nil)
	sid := a.open(t, rtok)
	before, ok := a.g.WorkerPid(sid)
	require.True(t, ok)

	resp, body := a.do(t, http.MethodPost, sid, rtok, toolCall("write"))
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)

	resp, body = a.do(t, http.MethodPost, sid, dtok, toolCall("write"))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "written", "the developer's call on the reader's session")
	after, ok := a.g.WorkerPid(sid)
	require.True(t, ok, "the session outlives the replacement")
	assert.NotEqual(t, before, after, "a new worker, not the reader's widened")
	assert.Equal(t, 1, a.g.Sessions())

	resp, body = a.do(t, http.MethodPost, sid, rtok, toolCall("write"))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the reader again: %s", body)
	_, body = a.do(t, http.MethodPost, sid, rtok, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	assert.NotContains(t, body, `"write"`)
	assert.Equal(t, "write", ranTools(t, ran))
}

// TestPolicyGolden pins the wire of the tier policy: the 401 without a
// token (every advertised scope), a reader's filtered list, the 403 step-up
// challenge, an admin-only tool refused to a developer, and the developer's
// call on the reader's session. Run with -update to rewrite.
func TestPolicyGolden(t *testing.T) {
	a, _ := newPolicyGateway(t)
	tokens := map[string]string{
		"none":      "",
		"reader":    a.token(t, "alice", readerScopes, nil),
		"developer": a.token(t, "alice", developerScopes, nil),
	}
	sid := a.open(t, tokens["reader"])
	var out strings.Builder
	for _, st := range []struct{ who, body string }{
		{"none", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"reader", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"reader", toolCall("write")},
		{"developer", toolCall("pid")},
		{"developer", toolCall("write")},
	} {
		headers := []string{sidHdr, sid, protoHdr, "2025-11-25"}
		if tok := tokens[st.who]; tok != "" {
			headers = append(headers, "Authorization", "Bearer "+tok)
		}
		resp, body := rawDo(t, http.MethodPost, a.url, st.body, headers...)
		fmt.Fprintf(&out, "> POST /mcp (token: %s)\n> %s\n< %d\n", st.who, st.body, resp.StatusCode)
		if ch := resp.Header.Get("WWW-Authenticate"); ch != "" {
			fmt.Fprintf(&out, "< WWW-Authenticate: %s\n", ch)
		}
		fmt.Fprintf(&out, "<\n%s\n\n", strings.TrimSpace(body))
	}
	golden := filepath.Join("testdata", "policy", "step_up.txt")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(out.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./gateway -run TestPolicyGolden -update")
	assert.Equal(t, string(want), out.String())
}

// TestSimpleFormStepsUp: required_scopes + write_scope is the policy "the
// write scope grants every tool", so a read-only token's call of a gated
// tool gets the 403 step-up too (no longer a JSON-RPC error in HTTP 200),
// and the write token on the same session runs it on a replaced worker.
// Failed before: HTTP 200 with kind readOnly, and readOnly again for the
// write token on the read-only session.
func TestSimpleFormStepsUp(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}}, worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + ran}})
	rtok := a.token(t, "alice", readScopes, nil)
	sid := a.open(t, rtok)

	resp, body := a.do(t, http.MethodPost, sid, rtok, toolCall("write"))
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `scope="mcp:use mcp:write"`)

	resp, body = a.do(t, http.MethodPost, sid, a.token(t, "alice", writeScopes, nil), toolCall("write"))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "written")
	assert.Equal(t, "write", ranTools(t, ran))
}

// TestPolicyNarrowerTokenCannotEndWiderSession (hostile): a developer's
// token on the session an admin's token of the same owner opened may not
// end it (DELETE), as a read-only token may not end a read-write session.
// Failed before: 200, and the admin's session was gone.
func TestPolicyNarrowerTokenCannotEndWiderSession(t *testing.T) {
	a, _ := newPolicyGateway(t)
	atok := a.token(t, "alice", developerScopes, admin)
	dtok := a.token(t, "alice", developerScopes, nil)
	sid := a.open(t, atok)

	resp, body := a.do(t, http.MethodDelete, sid, dtok, "")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	assert.Contains(t, body, "fewer tools than the session")
	_, body = a.do(t, http.MethodPost, sid, atok, toolCall("pid"))
	assert.Contains(t, body, `"result"`, "the admin's session goes on")

	resp, _ = a.do(t, http.MethodDelete, sid, atok, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
