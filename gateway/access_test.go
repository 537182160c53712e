package gateway

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/worker"
)

// These tests run the gateway behind the real authenticator against a real
// test issuer, as mcpgate serve does: the principal comes from a signed
// token, never from a test header.

const accessResource = "https://mcp.example.test/mcp"

var (
	writeScopes = []string{"mcp:use", "mcp:write"}
	readScopes  = []string{"mcp:use"}
)

type authedGateway struct {
	g   *Gateway
	url string
	iss *authtest.Issuer
}

// newAuthedGateway serves a gateway with the stub worker behind
// auth.Authenticator.Middleware: Keycloak-shaped tokens, the user from
// preferred_username, mcp:use required, mcp:write the write scope.
func newAuthedGateway(t *testing.T, opts Options, wopts ...worker.LauncherOptions) *authedGateway {
	t.Helper()
	return newAuthedGatewayWith(t, auth.Options{RequiredScopes: readScopes, WriteScope: "mcp:write"}, opts, wopts...)
}

// newAuthedGatewayWith is newAuthedGateway with the scopes and policies of
// aopts (the issuer, resource, user claim and client are the test's).
func newAuthedGatewayWith(t *testing.T, aopts auth.Options, opts Options, wopts ...worker.LauncherOptions) *authedGateway {
	t.Helper()
	iss := authtest.New(t)
	aopts.Resource = accessResource
	opts.Middleware = testAuthenticator(t, iss, aopts).Middleware
	g, srv := newTestGateway(t, opts, wopts...)
	return &authedGateway{g: g, url: srv.URL, iss: iss}
}

// testAuthenticator is the real authenticator against iss with aopts (the
// issuer, user claim, client and logger are the test's), its keys loaded.
func testAuthenticator(t testing.TB, iss *authtest.Issuer, aopts auth.Options) *auth.Authenticator {
	t.Helper()
	aopts.Issuer, aopts.UserClaim = iss.URL, "preferred_username"
	aopts.HTTPClient, aopts.Logger = iss.Client(), testLogger(t)
	a, err := auth.New(context.Background(), aopts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	select {
	case <-a.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the authenticator never loaded the issuer's keys")
	}
	return a
}

// token mints a token for user with scopes; mod, if set, edits its claims.
func (a *authedGateway) token(t *testing.T, user string, scopes []string, mod func(map[string]any)) string {
	t.Helper()
	c := a.iss.KeycloakClaims(user, accessResource, scopes...)
	if mod != nil {
		mod(c)
	}
	tok, err := a.iss.Sign(c, authtest.SignOptions{})
	require.NoError(t, err)
	return tok
}

// do sends one request on session sid (none when empty) with tok.
func (a *authedGateway) do(t *testing.T, method, sid, tok, body string) (*http.Response, string) {
	t.Helper()
	return rawDo(t, method, a.url, body, sidHdr, sid, protoHdr, "2025-11-25", "Authorization", "Bearer "+tok)
}

// open initializes a session with tok and returns its id.
func (a *authedGateway) open(t *testing.T, tok string) string {
	t.Helper()
	resp, body := rawDo(t, http.MethodPost, a.url, initBody, "Authorization", "Bearer "+tok)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	sid := resp.Header.Get(sidHdr)
	require.NotEmpty(t, sid)
	resp, body = a.do(t, http.MethodPost, sid, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	return sid
}

func toolCall(name string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `"}}`
}

// TestReadOnlyTokenCannotUndoAWriteSession: a read-only
// token of the session's owner may read through a read-write session, but
// not roll back (abort) or end (DELETE) what a write token did there.
func TestReadOnlyTokenCannotUndoAWriteSession(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo", "abort"}, UndoTools: []string{"abort"}},
		worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + ran}})
	wtok := a.token(t, "alice", writeScopes, nil)
	rtok := a.token(t, "alice", readScopes, nil)
	sid := a.open(t, wtok)

	_, body := a.do(t, http.MethodPost, sid, rtok, toolCall("abort"))
	assert.Contains(t, body, `"code":-32601`, "read-only abort on a write session")
	assert.Contains(t, body, `"kind":"readOnly"`)
	assert.Contains(t, body, "read-write session", "the refusal says why abort is refused")

	resp, body := a.do(t, http.MethodDelete, sid, rtok, "")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "read-only DELETE of a write session: %s", body)
	ch := resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, ch, `error="insufficient_scope"`)
	assert.Contains(t, ch, `scope="mcp:use mcp:write"`, "the challenge names the write scope")
	assert.Contains(t, ch, `resource_metadata="`)
	assert.Contains(t, body, "insufficient_scope")

	resp, _ = a.do(t, http.MethodPost, sid, wtok, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the session outlives the refused DELETE")

	_, body = a.do(t, http.MethodPost, sid, rtok, toolCall("echo"))
	assert.NotContains(t, body, `"kind":"readOnly"`, "a read-only token may still read")
	_, _ = a.do(t, http.MethodPost, sid, wtok, toolCall("abort"))
	assert.Equal(t, "echo\nabort", ranTools(t, ran), "only the write token's abort ran")

	// In a read-only session there is nothing to undo: abort and DELETE
	// are the owner's as before.
	rsid := a.open(t, rtok)
	_, body = a.do(t, http.MethodPost, rsid, rtok, toolCall("abort"))
	assert.NotContains(t, body, `"kind":"readOnly"`)
	resp, _ = a.do(t, http.MethodDelete, rsid, rtok, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = a.do(t, http.MethodDelete, sid, wtok, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestReadOnlyTokenCannotCancelAWrite: a read-only
// token's notifications/cancelled on a read-write session is dropped, since
// cancelling a write request (a commit) could roll its work back.
func TestReadOnlyTokenCannotCancelAWrite(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo", "inflight"}})
	wtok := a.token(t, "alice", writeScopes, nil)
	rtok := a.token(t, "alice", readScopes, nil)
	sid := a.open(t, wtok)

	// The write token's long request, running once its progress arrives.
	req, err := http.NewRequest(http.MethodPost, a.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":"w1"}}}`))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		sidHdr: sid, protoHdr: "2025-11-25", "Authorization": "Bearer " + wtok} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	st := &sseStream{resp, bufio.NewReader(resp.Body)}
	require.Equal(t, "notifications/progress", st.next(t)["method"])

	inflight := func(tok string) string {
		_, body := a.do(t, http.MethodPost, sid, tok, toolCall("inflight"))
		return body
	}
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1","reason":"hostile"}}`
	r, _ := a.do(t, http.MethodPost, sid, rtok, cancel)
	assert.Equal(t, http.StatusAccepted, r.StatusCode)
	assert.Contains(t, inflight(rtok), `"text":"1"`, "the write request still runs after a read-only cancel")
	r, _ = a.do(t, http.MethodPost, sid, wtok, cancel)
	assert.Equal(t, http.StatusAccepted, r.StatusCode)
	assert.Contains(t, inflight(wtok), `"text":"0"`, "the write token's own cancel stops it")
}

// TestReadOnlyMethods: read-only is fail-closed for
// methods as it is for tools. The spec's read methods pass, an operator's
// Options.SafeMethods pass, anything else is refused before the worker.
func TestReadOnlyMethods(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}, SafeMethods: []string{"x/vouched"}})
	wtok := a.token(t, "alice", writeScopes, nil)
	rtok := a.token(t, "alice", readScopes, nil)
	roSession := a.open(t, rtok)
	rwSession := a.open(t, wtok)

	req := func(method string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":{}}`
	}
	// The stub answers every method it does not serve with this: the
	// request reached the worker.
	const reached = "stub: method not found"
	pass := []string{
		"resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
		"prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
		"tasks/get", "tasks/result", "tasks/list", "x/vouched",
	}
	refuse := []string{"tasks/update", "x/custom", "Resources/Read", "sampling/createMessage", "rpc.discover"}
	for _, tc := range []struct {
		name, sid, tok string
		undo           bool // may end what another request started
	}{
		{"read-only session", roSession, rtok, true},
		{"read-only token on a read-write session", rwSession, rtok, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, body := a.do(t, http.MethodPost, tc.sid, tc.tok, req("tasks/cancel"))
			assert.Equal(t, tc.undo, strings.Contains(body, reached), "tasks/cancel reached the worker: %s", body)
			for _, m := range pass {
				_, body := a.do(t, http.MethodPost, tc.sid, tc.tok, req(m))
				assert.Contains(t, body, reached, "%s should reach the worker", m)
			}
			_, body = a.do(t, http.MethodPost, tc.sid, tc.tok, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
			assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{}}`, body)
			for _, m := range refuse {
				resp, body := a.do(t, http.MethodPost, tc.sid, tc.tok, req(m))
				assert.Equal(t, http.StatusOK, resp.StatusCode, m)
				assert.NotContains(t, body, reached, "%s must not reach the worker", m)
				assert.Contains(t, body, `"code":-32601`, m)
				assert.Contains(t, body, `"kind":"readOnly"`, m)
				assert.Contains(t, body, "safe_methods", "the refusal of %s says how to vouch for it", m)
			}
			// In a batch (2025-03-26) too, each request is decided alone.
			resp, body := rawDo(t, http.MethodPost, a.url, `[`+req("x/custom")+`,{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
				sidHdr, tc.sid, protoHdr, "2025-03-26", "Authorization", "Bearer "+tc.tok)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, body, `"kind":"readOnly"`)
			assert.Contains(t, body, `"id":6,"result":{}`)
		})
	}
	t.Run("a huge method name is clipped in the refusal", func(t *testing.T) {
		_, body := a.do(t, http.MethodPost, roSession, rtok, req("x/"+strings.Repeat("m", 1<<20)))
		assert.Contains(t, body, `"kind":"readOnly"`)
		assert.Less(t, len(body), 2048, "the refusal echoes the whole name")
	})
	t.Run("a write token", func(t *testing.T) {
		_, body := a.do(t, http.MethodPost, rwSession, wtok, req("x/custom"))
		assert.Contains(t, body, reached, "a read-write request passes any method")
	})
}

// TestSessionOwner: a session belongs to the issuer,
// subject, user id and client that opened it. A token that differs in any
// of them, such as alice's sub with another preferred_username (the user
// the worker runs as) or another client of alice's, is answered as if the
// session did not exist.
func TestSessionOwner(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}})
	alice := a.token(t, "alice", writeScopes, nil)
	sub := a.iss.KeycloakClaims("alice", accessResource)["sub"]
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	for _, tc := range []struct {
		name string
		tok  string
		want int
	}{
		{"alice again, a fresh token", a.token(t, "alice", writeScopes, nil), http.StatusOK},
		{"alice read-only", a.token(t, "alice", readScopes, nil), http.StatusOK},
		{"bob", a.token(t, "bob", writeScopes, nil), http.StatusNotFound},
		{"alice's sub, mallory's user name", a.token(t, "mallory", writeScopes, func(c map[string]any) { c["sub"] = sub }), http.StatusNotFound},
		{"alice's user name, another sub", a.token(t, "alice", writeScopes, func(c map[string]any) { c["sub"] = "not-alice" }), http.StatusNotFound},
		{"alice through another client", a.token(t, "alice", writeScopes, func(c map[string]any) { c["azp"] = "other-client" }), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := a.open(t, alice)
			resp, body := a.do(t, http.MethodPost, sid, tc.tok, ping)
			assert.Equal(t, tc.want, resp.StatusCode, body)
			if tc.want == http.StatusNotFound {
				resp, _ = a.do(t, http.MethodDelete, sid, tc.tok, "")
				assert.Equal(t, http.StatusNotFound, resp.StatusCode, "DELETE")
			}
			resp, _ = a.do(t, http.MethodPost, sid, alice, ping)
			assert.Equal(t, http.StatusOK, resp.StatusCode, "the session outlives every refused request")
		})
	}
}

// TestOwnerMismatchLog: the log line of a refused session lookup says what
// differed, without the token.
func TestOwnerMismatchLog(t *testing.T) {
	records := make(chan slog.Record, 256)
	a := newAuthedGateway(t, Options{Logger: slog.New(recordHandler{records})})
	tok := a.token(t, "alice", writeScopes, nil)
	sid := a.open(t, tok)
	sub := a.iss.KeycloakClaims("alice", accessResource)["sub"]
	mallory := a.token(t, "mallory", writeScopes, func(c map[string]any) { c["sub"] = sub })
	resp, _ := a.do(t, http.MethodPost, sid, mallory, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	for {
		var r slog.Record
		select {
		case r = <-records:
		default:
			t.Fatal("no log line for the refused lookup")
		}
		if r.Message != "gateway: a request named a session it does not own" {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(at slog.Attr) bool { attrs[at.Key] = at.Value.String(); return true })
		assert.Equal(t, "user", attrs["differs"])
		assert.Equal(t, "alice", attrs["session_user"])
		assert.Equal(t, "mallory", attrs["request_user"])
		for k, v := range attrs {
			assert.NotContains(t, v, "eyJ", "attribute %s holds token contents", k)
		}
		return
	}
}

// TestReadMethodsDocumented: docs/gateway.md and docs/configuration.md
// promise the read methods by name; they must name every one.
func TestReadMethodsDocumented(t *testing.T) {
	for _, doc := range []string{"../docs/gateway.md", "../docs/configuration.md"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range append(ReadMethods(), "tasks/cancel") {
			assert.Contains(t, string(b), "`"+m+"`", "%s does not name %s", doc, m)
		}
	}
}

// TestChallengeEchoesNoRawToolName: a read-only token calling a tool named
// with DEL and non-ASCII bytes gets a challenge whose error_description
// stays within RFC 6750 §3's character set (%x20-21 / %x23-5B / %x5D-7E),
// the name percent-encoded rather than echoed raw.
func TestChallengeEchoesNoRawToolName(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}})
	rtok := a.token(t, "alice", readScopes, nil)
	sid := a.open(t, rtok)
	resp, body := a.do(t, http.MethodPost, sid, rtok, toolCall(`drop\u007f\"é\\`))
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	ch := resp.Header.Get("WWW-Authenticate")
	_, desc, ok := strings.Cut(ch, `error_description="`)
	require.True(t, ok, ch)
	desc, _, ok = strings.Cut(desc, `"`)
	require.True(t, ok, ch)
	for i := 0; i < len(desc); i++ {
		if c := desc[i]; c < 0x20 || c > 0x7e || c == '\\' {
			t.Fatalf("error_description holds byte %#x: %q", c, ch)
		}
	}
	assert.Contains(t, desc, "tool 'drop%7F%22%C3%A9%5C' changes data", "the name is there, percent-encoded")
}

// TestQuotasArePerPrincipal: two accounts (two subjects) whose user claim
// names one user id do not share a quota: the first at its limit of
// sessions and per-user workers leaves the second its own, while the
// first's next one is still refused.
func TestQuotasArePerPrincipal(t *testing.T) {
	a := newAuthedGatewayWith(t, auth.Options{RequiredScopes: readScopes, WriteScope: "mcp:write"},
		Options{SafeTools: []string{"echo"}, MaxSessionsPerUser: 1})
	sub := func(s string) func(map[string]any) { return func(c map[string]any) { c["sub"] = s } }
	first := a.token(t, "kim", readScopes, sub("account-1"))
	second := a.token(t, "kim", readScopes, sub("account-2"))
	sid := a.open(t, first)
	// The session in use (its GET stream open), so that a new initialize
	// cannot end it as idle to make room.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(sidHdr, sid)
	req.Header.Set(protoHdr, "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+first)
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)

	resp, body := rawDo(t, http.MethodPost, a.url, initBody, "Authorization", "Bearer "+first)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the first account is at its limit: %s", body)
	resp, body = rawDo(t, http.MethodPost, a.url, initBody, "Authorization", "Bearer "+second)
	require.Equal(t, http.StatusOK, resp.StatusCode, "another account with the same user id has its own quota: %s", body)
}
