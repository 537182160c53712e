package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/certs"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/tools/db"
)

// TestMain lets this test binary be the built-in worker: the gateway starts
// os.Executable() with "worker", which here is the test binary itself; and
// the bridge, which the bridge test starts as an MCP client would.
func TestMain(m *testing.M) {
	// And mcpgate serve and exec-limited, for the signal and limit tests.
	if a := os.Args; len(a) > 1 && (a[1] == "worker" || a[1] == "bridge" || a[1] == "upstream" || a[1] == limitHelperCommand || a[1] == "serve") {
		main()
		return
	}
	os.Exit(m.Run())
}

// tlsGateway is `mcpgate serve` run in-process with TLS and auth against a
// test issuer, on the built-in worker and a scratch SQLite file.
type tlsGateway struct {
	issuer   *authtest.Issuer
	resource string
	client   *http.Client // trusts the gateway's certificate
	certPEM  []byte       // the gateway's certificate
	log      *bytes.Buffer
	addr     string     // host:port
	done     chan error // serve's return
}

func startTLSGateway(t *testing.T, extraEnv map[string]string) *tlsGateway {
	t.Helper()
	g := launchTLSGateway(t, extraEnv, tlsLaunch{})
	g.awaitServing(t)
	return g
}

// tlsLaunch says how launchTLSGateway starts the gateway: with its issuer
// down (until the test starts it), its log copied to watch as well.
type tlsLaunch struct {
	issuer     *authtest.Issuer // nil: a new one
	issuerDown bool
	watch      io.Writer
}

// launchTLSGateway starts serve as startTLSGateway does, without waiting for
// it to serve.
func launchTLSGateway(t *testing.T, extraEnv map[string]string, how tlsLaunch) *tlsGateway {
	t.Helper()
	dir := t.TempDir()
	iss := how.issuer
	if iss == nil {
		iss = authtest.New(t)
	}
	if how.issuerDown {
		iss.Stop()
	}
	caFile := filepath.Join(dir, "issuer-ca.pem")
	require.NoError(t, os.WriteFile(caFile, iss.CertPEM(), 0o644))
	certFile, keyFile, err := certs.WriteSelfSigned(filepath.Join(dir, "certs"), certs.DefaultHosts, time.Now())
	require.NoError(t, err)

	// A free port, so that the resource URI (and so the tokens' audience)
	// is known before the gateway listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()

	env := map[string]string{
		"MCPGATE_AUTH_ISSUER":          iss.URL,
		"MCPGATE_AUTH_ISSUER_CA_FILE":  caFile,
		"MCPGATE_AUTH_REQUIRED_SCOPES": "mcp:use",
		"MCPGATE_AUTH_WRITE_SCOPE":     "mcp:write",
		"MCPGATE_AUTH_USER_CLAIM":      "preferred_username",
		"MCPGATE_DATABASE_PATH":        filepath.Join(dir, "data", "mcpgate.db"),
		// The worker is this test binary (built with -race when the suite
		// is): on a loaded 2-core machine its start can pass the default.
		"MCPGATE_LIMITS_WORKER_START_TIMEOUT": "60s",
		// No load balancer waits to notice the drain of a test's gateway.
		"MCPGATE_LIMITS_DRAIN_MIN": "1ms",
		// Not the default 127.0.0.1:9464: tests run side by side.
		"MCPGATE_METRICS_LISTEN": "127.0.0.1:0",
	}
	for k, v := range extraEnv {
		env[k] = v
	}
	var log bytes.Buffer
	var stderr io.Writer = &syncWriter{w: &log}
	if how.watch != nil {
		stderr = io.MultiWriter(stderr, how.watch)
	}
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"serve", "--listen", addr, "--public-url", "https://" + addr,
			"--tls-cert", certFile, "--tls-key", keyFile})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "serve returned an error on shutdown")
		case <-time.After(60 * time.Second):
			t.Error("serve did not return after its context was cancelled")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.String())
		}
	})

	pem, err := os.ReadFile(certFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return &tlsGateway{issuer: iss, resource: "https://" + addr + "/mcp", client: client, log: &log, certPEM: pem, addr: addr, done: done}
}

// awaitServing returns once g serves with the issuer's keys loaded.
func (g *tlsGateway) awaitServing(t *testing.T) {
	t.Helper()
	// Wait until the gateway serves its metadata (it listens shortly after
	// Run starts) or Run fails. net.Listen happens inside Run, so polling
	// is the only outside view of it; the deadline keeps a broken start
	// from hanging the suite.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not serve within 60s\n%s", g.log.String())
		}
		select {
		case err := <-g.done:
			t.Fatalf("serve ended early: %v\n%s", err, g.log.String())
		default:
		}
		resp, err := g.client.Get("https://" + g.addr + "/.well-known/oauth-protected-resource/mcp")
		if err == nil {
			resp.Body.Close()
			// Serving, and the issuer's keys are loaded: a token is
			// checked rather than answered 503.
			if resp.StatusCode == http.StatusOK && g.keysLoaded(t) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keysLoaded reports whether the gateway checks tokens yet: until it has
// the issuer's keys it answers every token 503.
func (g *tlsGateway) keysLoaded(t *testing.T) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.token(t, "probe", "mcp:use"))
	resp, err := g.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusServiceUnavailable
}

// token mints a Keycloak-shaped token for user with scopes.
func (g *tlsGateway) token(t *testing.T, user string, scopes ...string) string {
	t.Helper()
	tok, err := g.issuer.Keycloak(user, g.resource, scopes...)
	require.NoError(t, err)
	return tok
}

// connect connects the go-sdk client at its defaults (it negotiates MCP
// 2026-07-28: no session, the caller's per-user worker), sending token.
func (g *tlsGateway) connect(t *testing.T, token *string) *mcp.ClientSession {
	t.Helper()
	return g.connectVersion(t, token, "")
}

// connectSession opens an MCP session on protocol 2025-11-25.
func (g *tlsGateway) connectSession(t *testing.T, token *string) *mcp.ClientSession {
	t.Helper()
	return g.connectVersion(t, token, "2025-11-25")
}

func (g *tlsGateway) connectVersion(t *testing.T, token *string, version string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, next: g.client.Transport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.resource, HTTPClient: hc, DisableStandaloneSSE: true}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// rawModern posts one 2026-07-28 tools/call of tool with args (JSON) and
// token.
func (g *tlsGateway) rawModern(t *testing.T, token, tool, args string) (int, http.Header, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, g.resource, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Authorization": "Bearer " + token} {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// raw posts one JSON-RPC message with token on session sid.
func (g *tlsGateway) raw(t *testing.T, token, sid, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.resource, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("MCP-Session-Id", sid)
	}
	resp, err := g.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

type bearer struct {
	token *string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+*b.token)
	return b.next.RoundTrip(r)
}

type syncWriter struct {
	mu chan struct{}
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	if s.mu == nil {
		s.mu = make(chan struct{}, 1)
	}
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.w.Write(p)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
	}
	return names
}

func statusOf(t *testing.T, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "status failed: %v", res.Content)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestServeTLSAuth drives the network-facing gateway end to end: tokens from
// a real issuer over HTTPS, the go-sdk client, real worker processes.
func TestServeTLSAuth(t *testing.T) {
	g := startTLSGateway(t, nil)

	t.Run("a write token gets a read-write worker as its user", func(t *testing.T) {
		tok := g.token(t, "alice", "mcp:use", "mcp:write")
		cs := g.connect(t, &tok)
		assert.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, "the go-sdk client at its defaults")
		st := statusOf(t, cs)
		assert.Equal(t, "alice", st["user"])
		assert.Equal(t, false, st["readOnly"])
		names := toolNames(t, cs)
		assert.True(t, names["execute_sql"], "execute_sql listed for a read-write session")
	})

	t.Run("a token without the write scope gets a read-only worker", func(t *testing.T) {
		tok := g.token(t, "alice", "mcp:use")
		cs := g.connect(t, &tok)
		assert.Equal(t, true, statusOf(t, cs)["readOnly"])
		names := toolNames(t, cs)
		for _, gated := range []string{"execute_sql", "commit", "apply_ddl", "drop_table"} {
			assert.False(t, names[gated], "%s listed in a read-only session", gated)
		}
		assert.True(t, names["query"], "query missing from a read-only session")
		// A gated tool is what the write scope would grant: 403
		// insufficient_scope, so a client can step up, not a
		// JSON-RPC error inside HTTP 200.
		code, h, body := g.rawModern(t, tok, "execute_sql", `{"sql":"DELETE FROM customers"}`)
		assert.Equal(t, http.StatusForbidden, code, body)
		assert.Contains(t, h.Get("WWW-Authenticate"), `error="insufficient_scope"`)
		assert.Contains(t, h.Get("WWW-Authenticate"), `scope="mcp:use mcp:write"`)
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_sql", Arguments: map[string]any{"sql": "DELETE FROM customers"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Forbidden", "the go-sdk client without an OAuth handler")
	})

	t.Run("a session on 2025-11-25 as before", func(t *testing.T) {
		tok := g.token(t, "alice", "mcp:use")
		cs := g.connectSession(t, &tok)
		assert.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
		assert.Equal(t, true, statusOf(t, cs)["readOnly"])
		assert.False(t, toolNames(t, cs)["execute_sql"], "execute_sql listed in a read-only session")
	})

	t.Run("another user's token cannot reach a session", func(t *testing.T) {
		alice := g.token(t, "alice", "mcp:use", "mcp:write")
		cs := g.connectSession(t, &alice)
		bob := g.token(t, "bob", "mcp:use", "mcp:write")
		code, _, _ := g.raw(t, bob, cs.ID(), `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		assert.Equal(t, http.StatusNotFound, code, "bob on alice's session")
		statusOf(t, cs) // alice's session is untouched
	})

	t.Run("a read-only token cannot undo a write session's work", func(t *testing.T) {
		tok := g.token(t, "alice", "mcp:use", "mcp:write")
		cs := g.connectSession(t, &tok)
		ro := g.token(t, "alice", "mcp:use")
		_, _, body := g.raw(t, ro, cs.ID(), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"abort"}}`)
		assert.Contains(t, body, `"kind":"readOnly"`, "the built-in abort is an undo tool")
		_, _, body = g.raw(t, ro, cs.ID(), `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"refresh"}}`)
		assert.NotContains(t, body, `"kind":"readOnly"`, "refresh undoes nothing: it refuses while changes are uncommitted")
	})

	t.Run("an expired token gets 401 and the session survives a renewed one", func(t *testing.T) {
		tok := g.token(t, "alice", "mcp:use", "mcp:write")
		cs := g.connectSession(t, &tok)
		claims := g.issuer.KeycloakClaims("alice", g.resource, "mcp:use", "mcp:write")
		claims["exp"] = time.Now().Add(-time.Minute).Unix()
		expired, err := g.issuer.Sign(claims, authtest.SignOptions{})
		require.NoError(t, err)
		code, h, _ := g.raw(t, expired, cs.ID(), `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.Contains(t, h.Get("WWW-Authenticate"), `error="invalid_token"`)
		tok = g.token(t, "alice", "mcp:use", "mcp:write") // renewed
		assert.Equal(t, "alice", statusOf(t, cs)["user"])
	})

	t.Run("the token never reaches the log", func(t *testing.T) {
		tok := g.token(t, "carol", "mcp:use")
		cs := g.connect(t, &tok)
		statusOf(t, cs)
		assert.NotContains(t, g.log.String(), tok[strings.LastIndexByte(tok, '.')+1:])
	})
}

// TestServeIntrospection runs the real program with auth.introspection:
// an opaque token is accepted through the issuer's RFC 7662 endpoint, an
// unknown one is refused 401, a failing endpoint is 503, and the client
// secret never reaches the log.
func TestServeIntrospection(t *testing.T) {
	const secret = "introspection-secret-0123456789"
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	g := startTLSGateway(t, map[string]string{
		"MCPGATE_AUTH_INTROSPECTION":                    "opaque",
		"MCPGATE_AUTH_INTROSPECTION_CLIENT_ID":          "mcpgate",
		"MCPGATE_AUTH_INTROSPECTION_CLIENT_SECRET_FILE": secretFile,
	})
	g.issuer.SetIntrospectionClient("mcpgate", secret)

	tok := g.issuer.Opaque(g.issuer.KeycloakClaims("alice", g.resource, "mcp:use"))
	cs := g.connect(t, &tok)
	st := statusOf(t, cs)
	assert.Equal(t, "alice", st["user"])
	assert.Equal(t, true, st["readOnly"])

	code, h, _ := g.raw(t, "ot_unknown", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, h.Get("WWW-Authenticate"), `error="invalid_token"`)

	g.issuer.FailIntrospection(http.StatusBadGateway)
	code, h, _ = g.raw(t, "ot_another", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.NotEmpty(t, h.Get("Retry-After"))

	// A JWT is still verified locally, the endpoint down or not.
	jwt := g.token(t, "bob", "mcp:use", "mcp:write")
	assert.Equal(t, "bob", statusOf(t, g.connect(t, &jwt))["user"])
	assert.NotContains(t, g.log.String(), secret)
}

// kindOf returns data.kind of a JSON-RPC error's data, as JSON.
func kindOf(t *testing.T, data json.RawMessage) string {
	t.Helper()
	var d struct {
		Kind json.RawMessage `json:"kind"`
	}
	require.NoError(t, json.Unmarshal(data, &d), "error data %s", data)
	return string(d.Kind)
}

// TestServeRefusesBadConfig checks that a configuration problem stops the
// gateway before it listens, naming every problem.
func TestServeRefusesBadConfig(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"non-loopback without TLS and auth", []string{"serve", "--listen", "0.0.0.0:8000"}, []string{"server.listen"}},
		{"every problem at once", []string{"serve", "--listen", "0.0.0.0:8000", "--tls-cert", "/nonexistent.pem", "--log-level", "loud"},
			[]string{"server.listen", "tls.key_file", "log.level"}},
		{"no arguments", []string{"serve", "extra"}, []string{"takes no arguments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			m := &Main{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
			err := m.Run(context.Background(), c.args)
			require.ErrorIs(t, err, errUsage)
			for _, w := range c.want {
				assert.Contains(t, stderr.String(), w)
			}
		})
	}
}

// TestGatewayOptionsDatabase: the database settings reach the built-in
// worker's environment.
func TestGatewayOptionsDatabase(t *testing.T) {
	cfg := config.Default()
	cfg.Database = config.Database{Driver: "postgres", DSN: "host=/run/postgresql dbname=mcp", ConnectAsUser: true, UserRoleMemberOf: "mcp_users"}
	_, _, d, err := builtinWorker(t.Context(), cfg, newLogger(cfg, io.Discard))
	require.NoError(t, err)
	got, err := db.ConfigFromEnv(func(name string) string {
		for _, kv := range d.Environ() {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	})
	require.NoError(t, err)
	assert.Equal(t, db.Config{Driver: db.Postgres, DSN: cfg.Database.DSN, ConnectAsUser: true, UserRoleMemberOf: "mcp_users"}.WithDefaults(), got)
}

// TestHelpAndUnknown checks the top-level usage: help exits 0 on stdout, an
// unknown command is a usage error on stderr.
func TestHelpAndUnknown(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "help"} {
		var out bytes.Buffer
		m := &Main{Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }}
		require.NoError(t, m.Run(context.Background(), []string{arg}))
		assert.Contains(t, out.String(), "mcpgate serve", arg)
	}
	var errOut bytes.Buffer
	m := &Main{Stdout: io.Discard, Stderr: &errOut, Getenv: func(string) string { return "" }}
	require.ErrorIs(t, m.Run(context.Background(), []string{"serv"}), errUsage)
	assert.Contains(t, errOut.String(), `unknown command "serv"`)
}

// TestBuiltinEnvGOMAXPROCS: the built-in worker starts with GOMAXPROCS=1
// (builtin.Environ: only set at start does it save memory), and the
// operator's worker.env, coming last, overrides it.
func TestBuiltinEnvGOMAXPROCS(t *testing.T) {
	d := db.Config{Driver: db.SQLite, DSN: "/data/x.db"}
	last := func(env []string, name string) string {
		v := ""
		for _, kv := range env {
			if k, val, _ := strings.Cut(kv, "="); k == name {
				v = val
			}
		}
		return v
	}
	env := builtinEnv(d, nil)
	assert.Equal(t, "1", last(env, "GOMAXPROCS"), "the default")
	assert.Equal(t, "/data/x.db", last(env, db.EnvDSN), "the database settings stay")
	env = builtinEnv(d, []string{"GOMAXPROCS=4", "TZ=UTC"})
	assert.Equal(t, "4", last(env, "GOMAXPROCS"), "worker.env wins")
	assert.Equal(t, "UTC", last(env, "TZ"))
}
