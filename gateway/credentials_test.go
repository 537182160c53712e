package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/credential"
)

// The gateway's confidential client at the test issuer, and the client of
// the downstream service its users' tokens are exchanged for.
const (
	credClient   = "mcpgate"
	credSecret   = "gateway-secret"
	credAudience = "github-mcp"
)

// credGateway serves a gateway of the stub worker behind the real token
// check, with creds as worker.credentials; the exchange client is the
// gateway's confidential client at the test issuer.
func credGateway(t *testing.T, creds []credential.Credential, xopts credential.ExchangeOptions, base ...Options) (*authedGateway, *testClock) {
	t.Helper()
	iss := authtest.New(t)
	clk := &testClock{now: time.Now()} // shared by the gateway, the exchange client and the issuer
	iss.Now = clk.Now
	iss.SetExchangeClient(credClient, credSecret)
	iss.AddClient(credAudience)
	a, err := auth.New(context.Background(), auth.Options{Issuer: iss.URL, Resource: accessResource, UserClaim: "preferred_username",
		RequiredScopes: readScopes, WriteScope: "mcp:write", HTTPClient: iss.Client(), Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	select {
	case <-a.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the authenticator never loaded the issuer's keys")
	}
	xopts.Issuer, xopts.ClientID, xopts.ClientSecret, xopts.HTTPClient, xopts.Now = iss.URL, credClient, []byte(credSecret), iss.Client(), clk.Now
	ex, err := credential.NewExchanger(xopts)
	require.NoError(t, err)
	remote := len(creds) > 0 && creds[0].Header != "" // a remote server's header credentials
	b, err := credential.New("github", credential.Options{Credentials: creds, Remote: remote}, ex)
	require.NoError(t, err)
	var opts Options
	if len(base) > 0 {
		opts = base[0]
	}
	opts.Middleware, opts.Credentials, opts.Now = a.Middleware, b, clk.Now
	g, srv := newTestGateway(t, opts)
	return &authedGateway{g: g, url: srv.URL, iss: iss}, clk
}

// exchangeable mints user's token naming the gateway's client among its
// audiences, as Keycloak's standard exchange needs.
func (a *authedGateway) exchangeable(t *testing.T, user string) string {
	return a.token(t, user, writeScopes, func(c map[string]any) { c["aud"] = []string{accessResource, credClient} })
}

var exchangeCred = []credential.Credential{{Env: "GITHUB_TOKEN", From: credential.FromTokenExchange, Audience: credAudience}}

// modernTool calls tool with text on the user's per-user worker
// (2026-07-28) and returns the HTTP status and the tool's text, or the
// JSON-RPC error's message.
func (a *authedGateway) modernTool(t *testing.T, tok, tool, text string) (int, string) {
	t.Helper()
	body := modernBody("1", "tools/call", `"name":"`+tool+`","arguments":{"text":"`+text+`"}`)
	resp, out := rawDo(t, http.MethodPost, a.url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool,
		"Authorization", "Bearer "+tok)
	return resp.StatusCode, answerText(t, out)
}

// answerText is a tools/call answer's first text, or its error's message.
func answerText(t *testing.T, out string) string {
	t.Helper()
	if i := strings.Index(out, "data: "); i >= 0 { // an event stream
		out = strings.TrimSpace(out[i+len("data: "):])
	}
	var m struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &m), "answer %s", out)
	if m.Error != nil {
		return m.Error.Message
	}
	require.NotEmpty(t, m.Result.Content, "answer %s", out)
	return m.Result.Content[0].Text
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestCredentialsEachUserSeesOwnExchangedToken: two users call the same
// stdio server; each worker holds that user's exchanged token and no
// other, and never the user's own token.
func TestCredentialsEachUserSeesOwnExchangedToken(t *testing.T) {
	a, _ := credGateway(t, exchangeCred, credential.ExchangeOptions{})
	alice, bob := a.exchangeable(t, "alice"), a.exchangeable(t, "bob")
	status, ha := a.modernTool(t, alice, "credhash", "GITHUB_TOKEN")
	require.Equal(t, http.StatusOK, status, ha)
	status, hb := a.modernTool(t, bob, "credhash", "GITHUB_TOKEN")
	require.Equal(t, http.StatusOK, status, hb)

	require.Len(t, a.iss.ExchangedFor("alice"), 1)
	require.Len(t, a.iss.ExchangedFor("bob"), 1)
	assert.Equal(t, sha(a.iss.ExchangedFor("alice")[0]), ha)
	assert.Equal(t, sha(a.iss.ExchangedFor("bob")[0]), hb)
	assert.NotEqual(t, ha, hb)
	assert.NotEqual(t, sha(alice), ha, "the client's own token never reaches the worker")

	// A 2025 session of alice's: its own worker, alice's token again (the
	// cache's), not bob's.
	sid := a.open(t, alice)
	_, out := a.do(t, http.MethodPost, sid, alice, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"credhash","arguments":{"text":"GITHUB_TOKEN"}}}`)
	assert.Equal(t, ha, answerText(t, out))
	assert.Equal(t, 2, a.iss.Exchanges(), "one exchange per user, cached")
}

// TestCredentialsRenewedAndWorkerReplaced: an exchanged token with a short
// lifetime is renewed before it is due, and the per-user worker holding
// the old one in its environment is replaced before its next call.
func TestCredentialsRenewedAndWorkerReplaced(t *testing.T) {
	a, clk := credGateway(t, exchangeCred, credential.ExchangeOptions{})
	a.iss.SetExchangeTTL(100 * time.Second)
	tok := a.exchangeable(t, "alice")
	_, pid1 := a.modernTool(t, tok, "pid", "")
	_, h1 := a.modernTool(t, tok, "credhash", "GITHUB_TOKEN")
	clk.advance(79 * time.Second) // before the renewal (a fifth of 100s before expiry)
	_, pid := a.modernTool(t, tok, "pid", "")
	assert.Equal(t, pid1, pid)
	clk.advance(2 * time.Second)
	_, pid2 := a.modernTool(t, tok, "pid", "")
	_, h2 := a.modernTool(t, tok, "credhash", "GITHUB_TOKEN")
	assert.NotEqual(t, pid1, pid2, "the worker holding the due token was replaced")
	require.Len(t, a.iss.ExchangedFor("alice"), 2)
	assert.Equal(t, sha(a.iss.ExchangedFor("alice")[1]), h2)
	assert.NotEqual(t, h1, h2)
	// The old worker is stopped, being idle.
	old, _ := strconv.Atoi(pid1)
	require.Eventually(t, func() bool { return !processAlive(old) }, 20*time.Second, 20*time.Millisecond)
}

// TestCredentialsIdleWorkerStoppedWhenDue: a per-user worker no request
// reaches does not keep a credential past its renewal: the reaper stops
// it.
func TestCredentialsIdleWorkerStoppedWhenDue(t *testing.T) {
	a, clk := credGateway(t, exchangeCred, credential.ExchangeOptions{})
	a.iss.SetExchangeTTL(100 * time.Second)
	_, pid := a.modernTool(t, a.exchangeable(t, "alice"), "pid", "")
	a.g.reapIdle()
	require.Equal(t, 1, a.g.PerUserWorkers(), "not due yet, nor idle long")
	clk.advance(81 * time.Second)
	a.g.reapIdle()
	assert.Zero(t, a.g.PerUserWorkers())
	old, _ := strconv.Atoi(pid)
	require.Eventually(t, func() bool { return !processAlive(old) }, 20*time.Second, 20*time.Millisecond)
}

// processAlive reports whether pid is a live (not zombie) process.
func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// TestCredentialsSessionEndsWhenDue: a 2025 session's state cannot move to
// a new worker: when its worker's credential is due, the session ends
// with a clear error.
func TestCredentialsSessionEndsWhenDue(t *testing.T) {
	a, clk := credGateway(t, exchangeCred, credential.ExchangeOptions{})
	a.iss.SetExchangeTTL(time.Hour) // the timer stays far away; the clock decides
	tok := a.exchangeable(t, "alice")
	sid := a.open(t, tok)
	resp, out := a.do(t, http.MethodPost, sid, tok, toolCall("pid"))
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	clk.advance(59 * time.Minute)
	resp, out = a.do(t, http.MethodPost, sid, tok, toolCall("pid"))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, out, "downstream credential expires")
	resp, _ = a.do(t, http.MethodPost, sid, tok, toolCall("pid"))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestCredentialsRefusedForOneUserOnly: a user whose exchange the issuer
// refuses gets an error naming the server and the issuer's error; the
// others are served.
func TestCredentialsRefusedForOneUserOnly(t *testing.T) {
	a, _ := credGateway(t, exchangeCred, credential.ExchangeOptions{})
	a.iss.RefuseExchange("bob", "access_denied")
	bob := a.exchangeable(t, "bob")
	status, msg := a.modernTool(t, bob, "credhash", "GITHUB_TOKEN")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, msg, `server "github"`)
	assert.Contains(t, msg, "access_denied")
	assert.NotContains(t, msg, bob)
	assert.Zero(t, a.g.PerUserWorkers(), "no worker starts without its credential")

	status, msg = a.modernTool(t, a.exchangeable(t, "alice"), "credhash", "GITHUB_TOKEN")
	assert.Equal(t, http.StatusOK, status, msg)

	// A token without the gateway's audience: Keycloak's rule.
	status, msg = a.modernTool(t, a.token(t, "carol", writeScopes, nil), "credhash", "GITHUB_TOKEN")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, msg, "access_denied")
}

// TestCredentialsIssuerDown: an issuer answering 500 fails the request
// with 502 and the status, and is not asked again at once.
func TestCredentialsIssuerDown(t *testing.T) {
	a, _ := credGateway(t, exchangeCred, credential.ExchangeOptions{})
	a.iss.FailExchange(http.StatusInternalServerError)
	tok := a.exchangeable(t, "alice")
	for range 5 {
		status, msg := a.modernTool(t, tok, "credhash", "GITHUB_TOKEN")
		assert.Equal(t, http.StatusBadGateway, status)
		assert.Contains(t, msg, "HTTP 500")
	}
	assert.Equal(t, 1, a.iss.Exchanges())
}

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestCredentialsNeverInLogsOrEvents: neither the exchanged tokens nor the
// users' own reach the gateway's log (at debug level) or its audit events,
// through a success, a refusal and a session.
func TestCredentialsNeverInLogsOrEvents(t *testing.T) {
	logs := &lockedBuffer{}
	rec := &recorder{}
	a, _ := credGateway(t, exchangeCred, credential.ExchangeOptions{}, Options{
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Observers: []Observer{rec},
	})
	alice := a.exchangeable(t, "alice")
	status, _ := a.modernTool(t, alice, "credhash", "GITHUB_TOKEN")
	require.Equal(t, http.StatusOK, status)
	sid := a.open(t, alice)
	a.do(t, http.MethodPost, sid, alice, toolCall("pid"))
	a.iss.RefuseExchange("bob", "access_denied")
	bob := a.exchangeable(t, "bob")
	status, _ = a.modernTool(t, bob, "credhash", "GITHUB_TOKEN")
	require.Equal(t, http.StatusForbidden, status)

	rec.mu.Lock()
	events := fmt.Sprintf("%+v", rec.events)
	rec.mu.Unlock()
	require.Contains(t, events, DecisionNoCredential, "the refusal is audited")
	secrets := append(a.iss.ExchangedFor("alice"), alice, bob)
	for _, s := range secrets {
		sig := s[strings.LastIndex(s, ".")+1:] // any part of it would do; the signature is unique
		assert.NotContains(t, logs.String(), sig)
		assert.NotContains(t, events, sig)
	}
}

// TestCredentialsHugeTokenRefused: a 1 MiB token from the issuer is
// refused with a short error, never handed to a worker.
func TestCredentialsHugeTokenRefused(t *testing.T) {
	a, _ := credGateway(t, exchangeCred, credential.ExchangeOptions{Timeout: 2 * time.Minute}) // signing 1 MiB is slow under -race
	a.iss.PadExchangedTokens(1 << 20)
	status, msg := a.modernTool(t, a.exchangeable(t, "alice"), "credhash", "GITHUB_TOKEN")
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, msg, "KiB")
	assert.Less(t, len(msg), 400)
	assert.Zero(t, a.g.PerUserWorkers())
}

// TestCredentialsFromFiles: per-user secret files at the gateway: a user
// with a file gets it, one without is refused, and a user id that climbs
// out of the directory is refused.
func TestCredentialsFromFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "alice"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bob"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alice", "JIRA_TOKEN"), []byte("alice-jira\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bob", "JIRA_TOKEN"), []byte("bob-jira\n"), 0o600))
	require.NoError(t, os.Chmod(dir, 0o700))
	a, _ := credGateway(t, []credential.Credential{
		{EnvFile: "JIRA_TOKEN", From: credential.FromFile, Dir: dir},
	}, credential.ExchangeOptions{})

	status, h := a.modernTool(t, a.token(t, "alice", writeScopes, nil), "credhash", "JIRA_TOKEN")
	require.Equal(t, http.StatusOK, status, h)
	assert.Equal(t, sha("file:alice-jira"), h, "the file's content, from a memory-backed file only the worker holds")

	status, msg := a.modernTool(t, a.token(t, "carol", writeScopes, nil), "credhash", "JIRA_TOKEN")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, msg, "no access")

	// The token check refuses the user id "../bob" first; the secret's
	// own opens would refuse it too (credential's tests).
	body := modernBody("1", "tools/call", `"name":"credhash","arguments":{"text":"JIRA_TOKEN"}`)
	resp, out := rawDo(t, http.MethodPost, a.url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "credhash",
		"Authorization", "Bearer "+a.token(t, "../bob", writeScopes, nil))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotContains(t, out, sha("file:bob-jira"))
}

// TestCredentialsManyUsersNeverCross: many users at once, through shared
// caches (the token check's and a small exchange cache that evicts): every
// worker holds its own user's token, never another's.
func TestCredentialsManyUsersNeverCross(t *testing.T) {
	a, _ := credGateway(t, exchangeCred, credential.ExchangeOptions{MaxCached: 3})
	const users = 8
	toks := make([]string, users)
	for i := range users {
		toks[i] = a.exchangeable(t, fmt.Sprintf("user%d", i))
	}
	var wg sync.WaitGroup
	got := make([][]string, users)
	var mu sync.Mutex
	for i := range users {
		for range 3 {
			wg.Go(func() {
				status, h := a.modernTool(t, toks[i], "credhash", "GITHUB_TOKEN")
				assert.Equal(t, http.StatusOK, status, h)
				mu.Lock()
				got[i] = append(got[i], h)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for i := range users {
		mine := map[string]bool{}
		for _, tok := range a.iss.ExchangedFor(fmt.Sprintf("user%d", i)) {
			mine[sha(tok)] = true
		}
		for _, h := range got[i] {
			assert.True(t, mine[h], "user%d's worker holds a token not exchanged for user%d", i, i)
		}
	}
}
