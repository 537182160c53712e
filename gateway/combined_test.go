package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/worker"
)

// The combined endpoint's tests: three servers behind one /mcp, as mcpgate
// serve mounts them: db and gh are built-in workers on SQLite files of
// their own, sdk the go-sdk test worker (a resource, a prompt, a resource
// link). The token comes from a real test issuer, checked by the real
// authenticator for the combined endpoint's audience.

// combinedServer is one combined endpoint under test.
type combinedServer struct {
	url     string
	iss     *authtest.Issuer
	members map[string]*Gateway
}

// combinedRights are the test servers' scopes: mcp:use on every token
// (the endpoint's), <server>:use to reach a server, <server>:write to
// write there.
func combinedRights(server string) auth.Rights {
	return auth.Rights{RequiredScopes: []string{server + ":use"}, WriteScope: server + ":write"}
}

// builtinMember is a gateway of the built-in worker on its own SQLite
// file.
func builtinMember(t testing.TB) *Gateway {
	t.Helper()
	safe, err := tools.SafeToolNames(nil)
	require.NoError(t, err)
	l, err := worker.NewLauncher([]string{builtinWorker}, worker.LauncherOptions{
		Env:             (db.Config{Driver: db.SQLite, DSN: filepath.Join(t.TempDir(), "data", "mcpgate.db")}).Environ(),
		IdentityOnStdin: true, StopGrace: 2 * time.Second, Logger: testLogger(t),
	})
	require.NoError(t, err)
	return memberGateway(t, l, Options{SafeTools: safe})
}

// commandMember is a gateway of a stdio worker command.
func commandMember(t testing.TB, command []string, safe ...string) *Gateway {
	t.Helper()
	return memberGateway(t, launcher(t, command, worker.LauncherOptions{Logger: testLogger(t), Env: []string{"SDKWORKER_RESOURCES=1"}}), Options{SafeTools: safe})
}

func memberGateway(t testing.TB, l *worker.Launcher, opts Options) *Gateway {
	t.Helper()
	opts.Logger, opts.MaxSessionsPerUser, opts.WorkerStartTimeout = testLogger(t), 64, time.Minute
	g, err := New(l, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, g.Close(ctx))
	})
	return g
}

// newCombinedServer serves members behind the real authenticator.
func newCombinedServer(t testing.TB, members ...Member) *combinedServer {
	t.Helper()
	iss := authtest.New(t)
	a := testAuthenticator(t, iss, auth.Options{Resource: accessResource, RequiredScopes: []string{"mcp:use"}})
	c, err := NewCombined(members, Options{Logger: testLogger(t), Middleware: a.Middleware})
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	cs := &combinedServer{url: srv.URL, iss: iss, members: map[string]*Gateway{}}
	for _, m := range members {
		cs.members[m.Name] = m.Gateway
	}
	return cs
}

// threeServers is db and gh (built-in) and sdk (the go-sdk test worker).
func threeServers(t testing.TB) *combinedServer {
	t.Helper()
	return newCombinedServer(t,
		Member{Name: "db", Gateway: builtinMember(t), Rights: combinedRights("db"), Title: "Database"},
		Member{Name: "gh", Gateway: builtinMember(t), Rights: combinedRights("gh")},
		Member{Name: "sdk", Gateway: commandMember(t, []string{sdkWorker}, "echo", "link", "pid"), Rights: combinedRights("sdk")},
	)
}

// token mints a token for user with mcp:use and scopes.
func (cs *combinedServer) token(t testing.TB, user string, scopes ...string) string {
	t.Helper()
	tok, err := cs.iss.Sign(cs.iss.KeycloakClaims(user, accessResource, append([]string{"mcp:use"}, scopes...)...), authtest.SignOptions{})
	require.NoError(t, err)
	return tok
}

// client connects the go-sdk client with tok on version ("": 2026-07-28).
func (cs *combinedServer) client(t testing.TB, tok, version string) *mcp.ClientSession {
	t.Helper()
	return as(t, cs.url, version, headers{"Authorization": "Bearer " + tok})
}

func toolNames(t testing.TB, c *mcp.ClientSession) []string {
	t.Helper()
	list, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// generations are the two protocol generations every behaviour is tried
// on: 2026-07-28 (no sessions) and 2025-11-25 (a combined session).
var generations = []string{"", "2025-11-25"}

func genName(v string) string {
	if v == "" {
		return "2026-07-28"
	}
	return v
}

// TestCombinedListsAndCalls: every server's tools under prefixed names, in
// the servers' order, none unprefixed; each callable and run by its own
// server's worker as the token's user; the resource a tool links to, and
// the one a prompt embeds, readable through the combined endpoint.
func TestCombinedListsAndCalls(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "alice", "db:use", "db:write", "gh:use", "sdk:use")
	for _, v := range generations {
		t.Run(genName(v), func(t *testing.T) {
			c := cs.client(t, tok, v)
			names := toolNames(t, c)
			require.Contains(t, names, "db__status")
			require.Contains(t, names, "gh__status")
			require.Contains(t, names, "sdk__echo")
			assert.Contains(t, names, "db__execute_sql", "db's write scope lists its writing tools")
			assert.NotContains(t, names, "gh__execute_sql", "gh without its write scope lists no writing tool")
			last := map[string]int{}
			for i, n := range names {
				server, _, ok := strings.Cut(n, NameSeparator)
				require.True(t, ok, "unprefixed tool %q", n)
				last[server] = i
			}
			assert.Less(t, last["db"], last["gh"])
			assert.Less(t, last["gh"], last["sdk"])

			st := statusOf(t, c, "db__status")
			assert.Equal(t, "alice", st["user"])
			assert.Equal(t, false, st["readOnly"], "db's write scope makes its worker read-write")
			st = statusOf(t, c, "gh__status")
			assert.Equal(t, "alice", st["user"])
			assert.Equal(t, true, st["readOnly"], "gh without its write scope is read-only")
			assert.Equal(t, "hi", callText(t, c, "sdk__echo", map[string]any{"text": "hi"}))

			res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "sdk__link"})
			require.NoError(t, err)
			link := res.Content[0].(*mcp.ResourceLink)
			assert.Equal(t, "sdk+note://hello", link.URI)
			read, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: link.URI})
			require.NoError(t, err)
			assert.Equal(t, "hello, world", read.Contents[0].Text)
			assert.Equal(t, "sdk+note://hello", read.Contents[0].URI)

			rl, err := c.ListResources(context.Background(), nil)
			require.NoError(t, err)
			require.Len(t, rl.Resources, 1)
			assert.Equal(t, "sdk+note://hello", rl.Resources[0].URI)

			pl, err := c.ListPrompts(context.Background(), nil)
			require.NoError(t, err)
			require.Len(t, pl.Prompts, 1)
			assert.Equal(t, "sdk__greet", pl.Prompts[0].Name)
			pr, err := c.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "sdk__greet"})
			require.NoError(t, err)
			assert.Equal(t, "sdk+note://hello", pr.Messages[0].Content.(*mcp.EmbeddedResource).Resource.URI)
		})
	}
}

func statusOf(t testing.TB, c *mcp.ClientSession, tool string) map[string]any {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: tool})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %+v", tool, res.Content)
	return res.StructuredContent.(map[string]any)
}

// TestCombinedReach: a server whose required scope the token lacks is not
// listed, and its tools are answered as tools that do not exist.
func TestCombinedReach(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "bob", "db:use")
	for _, v := range generations {
		t.Run(genName(v), func(t *testing.T) {
			c := cs.client(t, tok, v)
			for _, n := range toolNames(t, c) {
				assert.True(t, strings.HasPrefix(n, "db__"), "listed %q of a server out of reach", n)
			}
			_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "gh__status"})
			require.Error(t, err)
			_, err2 := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "nosuch__status"})
			require.Error(t, err2)
			assert.Equal(t, strings.ReplaceAll(err.Error(), "gh__", "X"), strings.ReplaceAll(err2.Error(), "nosuch__", "X"),
				"a server out of reach is told apart from one that does not exist")
		})
	}
}

// TestCombinedStepUp: a writing tool of a server whose write scope the
// token lacks gets the step-up challenge naming that server's write scope,
// keeping every scope the token holds, for the combined endpoint's own
// resource metadata.
func TestCombinedStepUp(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "carol", "db:use", "db:write", "gh:use")
	body := modernBody("1", "tools/call", `"name":"gh__execute_sql","arguments":{"sql":"DELETE FROM customers"}`)
	resp, out := rawDo(t, http.MethodPost, cs.url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "gh__execute_sql", "Authorization", "Bearer "+tok)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, out)
	ch := resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, ch, `error="insufficient_scope"`)
	assert.Contains(t, ch, `scope="mcp:use db:use db:write gh:use gh:write"`)
	assert.Contains(t, ch, "/.well-known/oauth-protected-resource/mcp\"")

	// With gh's write scope the same call reaches a read-write gh worker.
	tok = cs.token(t, "carol", "db:use", "db:write", "gh:use", "gh:write")
	c := cs.client(t, tok, "")
	assert.Equal(t, false, statusOf(t, c, "gh__status")["readOnly"])
}

// TestCombinedServerDown: a server whose worker cannot start leaves its
// tools out of the list, and the others keep working.
func TestCombinedServerDown(t *testing.T) {
	cs := newCombinedServer(t,
		Member{Name: "db", Gateway: builtinMember(t), Rights: combinedRights("db")},
		Member{Name: "down", Gateway: commandMember(t, []string{"/nonexistent/mcp-server"}), Rights: combinedRights("down")},
	)
	tok := cs.token(t, "dave", "db:use", "down:use")
	for _, v := range generations {
		t.Run(genName(v), func(t *testing.T) {
			c := cs.client(t, tok, v)
			names := toolNames(t, c)
			assert.Contains(t, names, "db__status")
			for _, n := range names {
				assert.False(t, strings.HasPrefix(n, "down__"), n)
			}
			assert.Equal(t, "dave", statusOf(t, c, "db__status")["user"])
			_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "down__anything"})
			assert.Error(t, err)
		})
	}
}

// TestCombinedHostileNames: what a client with a valid token of its own
// may try on the combined endpoint, on 2026-07-28 with raw requests: a
// tool of a server it cannot reach, an unprefixed name, extra separators,
// a resource of another server, an Mcp-Name that differs from the body's
// name, an ambiguous name member. None reaches a worker it should not.
func TestCombinedHostileNames(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "eve", "db:use", "db:write", "sdk:use")
	call := func(method, header, params string) (int, map[string]any) {
		t.Helper()
		resp, out := rawDo(t, http.MethodPost, cs.url, modernBody("1", method, params), protoHdr, "2026-07-28", "Mcp-Method", method, "Mcp-Name", header, "Authorization", "Bearer "+tok)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return resp.StatusCode, m
	}
	errCode := func(m map[string]any) float64 {
		e, ok := m["error"].(map[string]any)
		if !ok {
			return 0
		}
		return e["code"].(float64)
	}
	for _, tc := range []struct {
		name, method, header, params string
		code                         float64
	}{
		{"another server's tool", "tools/call", "gh__status", `"name":"gh__status"`, -32602},
		{"unprefixed", "tools/call", "status", `"name":"status"`, -32602},
		{"no server", "tools/call", "__status", `"name":"__status"`, -32602},
		{"no tool", "tools/call", "db__", `"name":"db__"`, -32602},
		{"upper-case server", "tools/call", "DB__status", `"name":"DB__status"`, -32602},
		{"extra separators reach only db's own names", "tools/call", "db____status", `"name":"db____status"`, -32602},
		{"header names another server", "tools/call", "db__status", `"name":"sdk__echo"`, -32020},
		{"header names the server's own name", "tools/call", "status", `"name":"db__status"`, -32020},
		{"no header", "tools/call", "", `"name":"db__status"`, -32020},
		{"header of an unreachable server", "tools/call", "gh__status", `"name":"db__status"`, -32020},
		{"name twice", "tools/call", "db__status", `"name":"db__status","Name":"gh__status"`, -32602},
		{"name not a string", "tools/call", "db__status", `"name":["db__status"]`, -32602},
		{"another server's resource", "resources/read", "gh+note://hello", `"uri":"gh+note://hello"`, -32602},
		{"unprefixed resource", "resources/read", "note://hello", `"uri":"note://hello"`, -32602},
		{"another server's prompt", "prompts/get", "gh__greet", `"name":"gh__greet"`, -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := call(tc.method, tc.header, tc.params)
			assert.Equal(t, tc.code, errCode(m), "%v", m)
		})
	}
	// A completion reference of another server.
	_, m := call("completion/complete", "", `"ref":{"type":"ref/prompt","name":"gh__greet"},"argument":{"name":"a","value":"b"}`)
	assert.Equal(t, float64(-32602), errCode(m), "%v", m)
	// gh's worker never started: nothing reached it.
	assert.Zero(t, cs.members["gh"].Workers(WorkerUser))
	assert.Zero(t, cs.members["gh"].Sessions())
}

// TestCombinedLazyWorkers: a call starts only the worker it needs; a list
// starts the listed servers' workers.
func TestCombinedLazyWorkers(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "frank", "db:use", "gh:use", "sdk:use")
	c := cs.client(t, tok, "")
	_ = statusOf(t, c, "db__status")
	assert.Equal(t, 1, cs.members["db"].Workers(WorkerUser))
	assert.Zero(t, cs.members["gh"].Workers(WorkerUser))
	assert.Zero(t, cs.members["sdk"].Workers(WorkerUser))
	_ = toolNames(t, c)
	assert.Equal(t, 1, cs.members["gh"].Workers(WorkerUser))
	assert.Equal(t, 1, cs.members["sdk"].Workers(WorkerUser))
}

// TestCombinedSessionDelete: DELETE of a combined session ends the member
// sessions it opened, and the session id is gone after.
func TestCombinedSessionDelete(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "gina", "db:use", "db:write", "sdk:use")
	c := cs.client(t, tok, "2025-11-25")
	_ = statusOf(t, c, "db__status")
	assert.Equal(t, 1, cs.members["db"].Sessions())
	assert.Zero(t, cs.members["sdk"].Sessions(), "a call opened a session on a server it did not name")
	require.NoError(t, c.Close())
	assert.Zero(t, cs.members["db"].Sessions())
}

// TestCombinedNotifications: a server's list change reaches the client of
// the combined endpoint (a merged subscriptions/listen on 2026-07-28, the
// call's stream or the merged GET stream of a session), and the new tool
// is listed under its prefixed name.
func TestCombinedNotifications(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "hank", "db:use", "sdk:use", "sdk:write")
	for _, v := range generations {
		t.Run(genName(v), func(t *testing.T) {
			changed := make(chan struct{}, 8)
			c := connectVersion(t, &mcp.StreamableClientTransport{Endpoint: cs.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: headers{"Authorization": "Bearer " + tok}}},
				&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}, v)
			name := "fresh_" + strings.ReplaceAll(genName(v), "-", "_")
			assert.Equal(t, "added "+name, callText(t, c, "sdk__addtool", map[string]any{"name": name}))
			select {
			case <-changed:
			case <-time.After(30 * time.Second):
				t.Fatal("no tools/list_changed reached the combined endpoint's client")
			}
			assert.Contains(t, toolNames(t, c), "sdk__"+name)
		})
	}
}

// TestCombinedHandles: a transaction handle minted by one server's worker
// carries its server (its worker's instance id): it works in that
// server's calls, and another server's worker refuses it as foreign.
func TestCombinedHandles(t *testing.T) {
	cs := threeServers(t)
	c := cs.client(t, cs.token(t, "ivan", "db:use", "db:write", "gh:use", "gh:write"), "")
	_ = toolNames(t, c) // the client mirrors x-mcp-header arguments of the tools it has listed
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "db__begin"})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	handle := res.StructuredContent.(map[string]any)["transaction"].(string)
	require.NotEmpty(t, handle)
	assert.False(t, statusWith(t, c, "db__status", handle).IsError, "the handle in its own server's call")
	res = statusWith(t, c, "gh__status", handle)
	require.True(t, res.IsError, "another server's worker took the handle")
	assert.Equal(t, "handleForeign", res.StructuredContent.(map[string]any)["error"].(map[string]any)["kind"])
}

func statusWith(t testing.TB, c *mcp.ClientSession, tool, handle string) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"transaction": handle}})
	require.NoError(t, err)
	return res
}

// TestCombinedPolicies: a server's own policies decide its share of the
// token: the tools its rules grant are listed, a tool a rule's scope would
// grant gets the step-up challenge naming that scope, and a server whose
// rules grant the token nothing is out of reach.
func TestCombinedPolicies(t *testing.T) {
	policy := auth.Rights{RequiredScopes: []string{"db:use"}, Policies: []auth.Rule{
		{Scope: "db:read", Tools: []string{"status", "query"}},
		{Scope: "db:admin", Tools: []string{"status", "query", "execute_sql"}},
	}}
	cs := newCombinedServer(t,
		Member{Name: "db", Gateway: builtinMember(t), Rights: policy},
		Member{Name: "gh", Gateway: builtinMember(t), Rights: combinedRights("gh")},
	)
	reader := cs.token(t, "judy", "db:use", "db:read", "gh:use")
	c := cs.client(t, reader, "2025-11-25")
	names := toolNames(t, c)
	var dbTools []string
	for _, n := range names {
		if strings.HasPrefix(n, "db__") {
			dbTools = append(dbTools, n)
		}
	}
	assert.ElementsMatch(t, []string{"db__status", "db__query"}, dbTools)
	assert.Equal(t, true, statusOf(t, c, "db__status")["readOnly"], "a grant of safe tools is a read-only worker")

	body := modernBody("1", "tools/call", `"name":"db__execute_sql","arguments":{"sql":"DELETE FROM customers"}`)
	resp, out := rawDo(t, http.MethodPost, cs.url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "db__execute_sql", "Authorization", "Bearer "+reader)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, out)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `scope="mcp:use db:use db:read gh:use db:admin"`)

	none := cs.client(t, cs.token(t, "judy", "db:use", "gh:use"), "")
	for _, n := range toolNames(t, none) {
		assert.True(t, strings.HasPrefix(n, "gh__"), "listed %q of a server whose policies grant nothing", n)
	}
}

// TestCombinedSessionStepUp: on a combined session, a writing tool of a
// server whose write scope the token lacks gets that server's step-up
// challenge; the same session with the stepped-up token then writes there
// (the member session's read-only worker is replaced), and the other
// server's session is untouched.
func TestCombinedSessionStepUp(t *testing.T) {
	cs := threeServers(t)
	do := func(tok, sid, body string) (*http.Response, string) {
		t.Helper()
		return rawDo(t, http.MethodPost, cs.url, body, protoHdr, "2025-11-25", sidHdr, sid, "Authorization", "Bearer "+tok)
	}
	reader := cs.token(t, "kate", "db:use", "db:write", "gh:use")
	resp, out := do(reader, "", initBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	sid := resp.Header.Get(sidHdr)
	require.NotEmpty(t, sid)
	do(reader, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, out = do(reader, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"db__status"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	write := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gh__execute_sql","arguments":{"sql":"CREATE TABLE t (x)"}}}`
	resp, out = do(reader, sid, write)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, out)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `scope="mcp:use db:use db:write gh:use gh:write"`)

	writer := cs.token(t, "kate", "db:use", "db:write", "gh:use", "gh:write")
	resp, out = do(writer, sid, write)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	assert.NotContains(t, out, `"isError":true`, out)
	assert.Equal(t, 2, cs.members["db"].Sessions()+cs.members["gh"].Sessions())
}

// TestCombinedLongToolName: a tool whose prefixed name would be longer
// than MCP allows (128) is left out of the combined list, not listed
// under a name clients refuse; a shorter one is listed.
func TestCombinedLongToolName(t *testing.T) {
	cs := threeServers(t)
	c := cs.client(t, cs.token(t, "leo", "sdk:use", "sdk:write"), "")
	long, fits := strings.Repeat("l", 124), strings.Repeat("f", 123)
	for _, n := range []string{long, fits} {
		assert.Equal(t, "added "+n, callText(t, c, "sdk__addtool", map[string]any{"name": n}))
	}
	names := toolNames(t, c)
	assert.Contains(t, names, "sdk__"+fits)
	assert.NotContains(t, names, "sdk__"+long)
}

// TestCombinedSessionHostile: a combined session is its principal's
// alone (another user's token naming it gets 404, as an unknown one), an
// initialize too big to keep is refused, and a batch (whose messages could
// belong to several servers) is refused.
func TestCombinedSessionHostile(t *testing.T) {
	cs := threeServers(t)
	do := func(tok, sid, body string) (*http.Response, string) {
		t.Helper()
		return rawDo(t, http.MethodPost, cs.url, body, protoHdr, "2025-11-25", sidHdr, sid, "Authorization", "Bearer "+tok)
	}
	alice := cs.token(t, "alice", "db:use")
	resp, out := do(alice, "", initBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	sid := resp.Header.Get(sidHdr)
	status := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"db__status"}}`
	resp, out = do(cs.token(t, "mallory", "db:use"), sid, status)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, out)
	resp, out = do(alice, sid, status)
	assert.Equal(t, http.StatusOK, resp.StatusCode, out)
	assert.Contains(t, out, `"alice"`)

	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"x":"` + strings.Repeat("a", 70<<10) + `"},"clientInfo":{"name":"raw","version":"1"}}}`
	resp, out = do(alice, "", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, out)

	resp, out = rawDo(t, http.MethodPost, cs.url, "["+status+"]", protoHdr, "2025-03-26", sidHdr, sid, "Authorization", "Bearer "+alice)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, out)
}

// TestCombinedSessionSampling: a server's request to the client during a
// call (sampling) reaches the combined session's client, and its answer
// finds its way back to that server, for two servers whose own request
// ids are alike.
func TestCombinedSessionSampling(t *testing.T) {
	cs := newCombinedServer(t,
		Member{Name: "a", Gateway: commandMember(t, nil), Rights: combinedRights("a")},
		Member{Name: "b", Gateway: commandMember(t, nil), Rights: combinedRights("b")},
	)
	tok := cs.token(t, "nina", "a:use", "a:write", "b:use", "b:write")
	c := connectVersion(t, &mcp.StreamableClientTransport{Endpoint: cs.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: headers{"Authorization": "Bearer " + tok}}},
		&mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "re: " + req.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		}}, "2025-11-25")
	for _, server := range []string{"a", "b", "a"} {
		// Bounded: an answer that never finds its server leaves the call waiting.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: server + "__sample", Arguments: map[string]any{"text": "from " + server}})
		cancel()
		require.NoError(t, err, server)
		require.Len(t, res.Content, 1)
		assert.Equal(t, "sampled: re: from "+server, res.Content[0].(*mcp.TextContent).Text)
	}
}
