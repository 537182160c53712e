package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/config"
)

// everythingServer returns the install prefix and script of the npm
// everything server .ci/run installs under .bin/npm, or skips the test
// (fails it under MCPGATE_REQUIRE_ROOT=1) when it or node is missing.
func everythingServer(t *testing.T) (prefix, script string) {
	t.Helper()
	prefix, err := filepath.Abs(filepath.Join("..", "..", ".bin", "npm"))
	require.NoError(t, err)
	script = filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	manifest, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(script)), "package.json"))
	_, noNode := exec.LookPath("node")
	if noNode != nil || !strings.Contains(string(manifest), `"version": "`+everythingVersion+`"`) {
		why := "node or @modelcontextprotocol/server-everything@" + everythingVersion + " under .bin/npm is missing (.ci/run installs them)"
		if os.Getenv("MCPGATE_REQUIRE_ROOT") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return prefix, script
}

// serversGateway starts the real program with two servers: db, the
// built-in worker on SQLite, with its own required and write scopes; and
// ev, the npm everything server over stdio, under a policy (ev:use grants
// echo, ev:more echo and get-sum). It returns the gateway as each path's
// client sees it.
func serversGateway(t *testing.T) (db, ev *tlsGateway) {
	t.Helper()
	prefix, script := everythingServer(t)
	file := filepath.Join(t.TempDir(), "servers.yaml")
	yaml := `
servers:
  - name: db
    title: The database
    required_scopes: [db:use]
    write_scope: db:write
  - name: ev
    command: [node, ` + script + `, stdio]
    dir: ` + prefix + `
    required_scopes: []
    safe_tools: [echo, get-sum]
    policies:
      - {scope: ev:use, tools: [echo]}
      - {scope: ev:more, tools: [echo, get-sum]}
`
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
	g := launchTLSGateway(t, map[string]string{"MCPGATE_CONFIG": file, "MCPGATE_AUTH_REQUIRED_SCOPES": "", "MCPGATE_AUTH_WRITE_SCOPE": ""}, tlsLaunch{})
	base := g.resource
	db, ev = new(tlsGateway), new(tlsGateway)
	*db, *ev = *g, *g
	db.resource, ev.resource = base+"/db", base+"/ev"
	db.awaitServing(t)
	return db, ev
}

// TestSeveralServers: each server at its own path, on both protocol
// generations, with its own metadata, audience, scopes, read-only rule and
// policy; and what a user with a valid token for one server tries against
// the other.
func TestSeveralServers(t *testing.T) {
	db, ev := serversGateway(t)
	origin := strings.TrimSuffix(db.resource, "/mcp/db")

	t.Run("metadata", func(t *testing.T) {
		for _, c := range []struct {
			g      *tlsGateway
			scopes []any
		}{{db, []any{"db:use", "db:write"}}, {ev, []any{"ev:use", "ev:more"}}} {
			path := strings.TrimPrefix(c.g.resource, origin)
			resp, err := c.g.client.Get(origin + "/.well-known/oauth-protected-resource" + path)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
			resp.Body.Close()
			assert.Equal(t, c.g.resource, doc["resource"])
			assert.Equal(t, c.scopes, doc["scopes_supported"])
		}
	})

	t.Run("each server at its path, both generations", func(t *testing.T) {
		dbTok := db.token(t, "alice", "db:use", "db:write")
		evTok := ev.token(t, "alice", "ev:use")
		for _, version := range []string{"", "2025-11-25"} {
			cs := db.connectVersion(t, &dbTok, version)
			names := toolNames(t, cs)
			assert.True(t, names["query"] && names["status"], "db tools on %q: %v", version, names)
			assert.False(t, names["echo"], "the everything server's tool at /mcp/db")
			st := statusOf(t, cs)
			assert.Equal(t, false, st["readOnly"], "db:write makes db read-write")

			cs = ev.connectVersion(t, &evTok, version)
			names = toolNames(t, cs)
			assert.Equal(t, map[string]bool{"echo": true}, names, "ev:use grants echo alone, on %q", version)
			assert.Equal(t, "Echo: hello", callText(t, cs, "echo", map[string]any{"message": "hello"}))
		}
	})

	t.Run("a token for one server is refused at another", func(t *testing.T) {
		ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		// Every scope both servers ask for, but the audience of db alone.
		dbTok := db.token(t, "mallory", "db:use", "db:write", "ev:use", "ev:more")
		code, h, _ := ev.raw(t, dbTok, "", ping)
		assert.Equal(t, http.StatusUnauthorized, code)
		ch := h.Get("WWW-Authenticate")
		assert.Contains(t, ch, `error="invalid_token"`)
		assert.Contains(t, ch, `resource_metadata="`+origin+`/.well-known/oauth-protected-resource/mcp/ev"`)
		assert.NotContains(t, ch, "db:")

		evTok := ev.token(t, "mallory", "db:use", "db:write", "ev:use")
		code, h, _ = db.raw(t, evTok, "", ping)
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.Contains(t, h.Get("WWW-Authenticate"), `/.well-known/oauth-protected-resource/mcp/db"`)

		// The gateway's own /mcp resource is neither.
		top, err := db.issuer.Keycloak("mallory", origin+"/mcp", "db:use", "ev:use")
		require.NoError(t, err)
		code, _, _ = db.raw(t, top, "", ping)
		assert.Equal(t, http.StatusUnauthorized, code)

		// A session opened at db is not one at ev, even for a token good at both.
		both, err := db.issuer.Sign(func() map[string]any {
			c := db.issuer.KeycloakClaims("mallory", db.resource, "db:use", "ev:use")
			c["aud"] = []string{db.resource, ev.resource}
			return c
		}(), authtest.SignOptions{})
		require.NoError(t, err)
		cs := db.connectSession(t, &both)
		code, _, out := ev.raw(t, both, cs.ID(), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		assert.Equal(t, http.StatusNotFound, code, out)
		// And that token's db rights stay db's: no db:write, read-only.
		assert.Equal(t, true, statusOf(t, cs)["readOnly"])
	})

	t.Run("path games never reach another server", func(t *testing.T) {
		dbTok := db.token(t, "mallory", "db:use", "db:write", "ev:use", "ev:more")
		hc := *db.client
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		for _, p := range []string{"/mcp/db/../ev", "/mcp/./ev", "/mcp//ev", "/mcp/db%2F..%2Fev", "/mcp/DB", "/mcp/db/", "/mcp/db/x", "/mcp/ev%00", "/mcp", "/mcp/"} {
			req, err := http.NewRequest(http.MethodPost, origin+p, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Authorization", "Bearer "+dbTok)
			resp, err := hc.Do(req)
			if err != nil {
				continue // refused before HTTP (a NUL in the path)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.NotEqual(t, http.StatusOK, resp.StatusCode, "%s: %s", p, body)
			assert.NotContains(t, string(body), "echo", p)
		}
		resp, err := db.client.Get(origin + "/.well-known/oauth-protected-resource/mcp/nope")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp, err = db.client.Get(origin + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "every server ready")
	})

	t.Run("read-only per server", func(t *testing.T) {
		// The top-level write scope is not db's: a token holding it but not
		// db:write gets a read-only db worker.
		tok := db.token(t, "bob", "db:use", "mcp:write", "ev:more")
		cs := db.connect(t, &tok)
		assert.Equal(t, true, statusOf(t, cs)["readOnly"])
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "apply_ddl", Arguments: map[string]any{"sql": "CREATE TABLE t (id integer)"}})
		if err == nil {
			assert.True(t, res.IsError, "apply_ddl on a read-only db worker")
		}
	})

	t.Run("step-up names the server's own scope", func(t *testing.T) {
		// The challenge asks for the token's own scopes plus ev's missing one.
		tok := ev.token(t, "carol", "ev:use")
		code, h, out := ev.rawModern(t, tok, "get-sum", `{"a":1,"b":2}`)
		assert.Equal(t, http.StatusForbidden, code, out)
		ch := h.Get("WWW-Authenticate")
		assert.Contains(t, ch, `error="insufficient_scope"`)
		assert.Contains(t, ch, `scope="ev:use ev:more"`)
		assert.Contains(t, ch, `/.well-known/oauth-protected-resource/mcp/ev"`)

		more := ev.token(t, "carol", "ev:use", "ev:more")
		code, _, out = ev.rawModern(t, more, "get-sum", `{"a":1,"b":2}`)
		assert.Equal(t, http.StatusOK, code, out)
		assert.Contains(t, out, "3")
	})

	t.Run("metrics count calls by server", func(t *testing.T) {
		addr := regexp.MustCompile(`serving metrics" url=(http://\S+/metrics)`).FindStringSubmatch(db.log.String())
		require.NotNil(t, addr)
		resp, err := http.Get(addr[1])
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Regexp(t, `mcpgate_server_tool_calls_total\{outcome="ok",server="db"\} [1-9]`, string(body))
		assert.Regexp(t, `mcpgate_server_tool_calls_total\{outcome="ok",server="ev"\} [1-9]`, string(body))
	})

	t.Run("audit events name the server", func(t *testing.T) {
		assert.Contains(t, db.log.String(), `msg=audit event=tools/call server=ev user=alice`)
		assert.Contains(t, db.log.String(), `msg=audit event=tools/call server=db user=alice`)
	})
}

// TestUpstreamArgv: a remote server's worker is this executable's
// `mcpgate upstream`, with the files by absolute path.
func TestUpstreamArgv(t *testing.T) {
	e := &config.ServerEntry{Name: "saas", URL: "https://saas.example.com/mcp"}
	assert.Equal(t, []string{"/bin/mcpgate", "upstream", "--name", "saas", "--url", "https://saas.example.com/mcp"}, upstreamArgv("/bin/mcpgate", e))
	e.HeadersFile, e.CAFile = "h", "/etc/ca.pem"
	argv, err := upstreamWorkerCommand(e)
	require.NoError(t, err)
	wd, _ := os.Getwd()
	assert.Equal(t, []string{"upstream", "--name", "saas", "--url", "https://saas.example.com/mcp", "--headers-file", filepath.Join(wd, "h"), "--ca-file", "/etc/ca.pem"}, argv[1:])
	assert.Equal(t, "h", e.HeadersFile, "the entry itself is left as configured")
}
