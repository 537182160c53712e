package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/oauthclient"
)

func TestParseConfigPairsAndHold(t *testing.T) {
	cfg, err := parseConfig(nil, "/self", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Pairs, allPairs) || cfg.SessionUsers != 16 || !slices.Contains(cfg.HoldSystems, sysMCPGateTLS) {
		t.Errorf("got pairs %v hold users %d hold systems %v", cfg.Pairs, cfg.SessionUsers, cfg.HoldSystems)
	}
	if !slices.Contains(cfg.Systems, sysMCPProxy) || !slices.Contains(modernSystems, sysMCPProxy) {
		t.Errorf("mcp-proxy is not a system of both phases: %v %v", cfg.Systems, modernSystems)
	}
	cfg, err = parseConfig([]string{"-pairs", "dpop", "-session-users", "4", "-mcp-proxy", "/x/mcp-proxy",
		"-mcpgate-servers", "bin/mcpgate serve --config 's.yaml'", "-servers-name", "db",
		"-local-daemon", "bin/mcpgate serve --listen unix:{socket}", "-local-shim", "bin/mcpgate bridge --socket {socket}"}, "/self", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Pairs, []string{"dpop"}) || cfg.SessionUsers != 4 || cfg.ServersName != "db" ||
		!slices.Equal(cfg.Servers, []string{"bin/mcpgate", "serve", "--config", "s.yaml"}) ||
		!slices.Equal(cfg.MCPProxy, []string{"/x/mcp-proxy"}) || len(cfg.LocalDaemon) != 4 || len(cfg.LocalShim) != 4 {
		t.Errorf("got %+v", cfg)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-pairs", "dpop,grpc"}, `unknown pair "grpc"`},
		{[]string{"-session-users", "0"}, "-session-users must be positive"},
	} {
		if _, err := parseConfig(bad.args, "/self", io.Discard); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: got error %v, want one containing %q", bad.args, err, bad.want)
		}
	}
}

// countingServer serves the stand-in tools over Streamable HTTP and counts
// initialize requests by their Authorization header.
func countingServer(t *testing.T) (*httptest.Server, func() map[string]int) {
	t.Helper()
	srv := newToolServer("test")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	inits := map[string]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			mu.Lock()
			inits[r.Header.Get("Authorization")]++
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(inits)
	}
}

func testClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
}

var echoTool = Tool{Label: "trivial", Name: "echo", Args: json.RawMessage(`{"text":"hi"}`)}

func TestSessionsSpreadOverUsers(t *testing.T) {
	hs, inits := countingServer(t)
	tg := &httpTarget{client: testClient(), endpoint: hs.URL, procfs: pfs(), token: "t0",
		users: []string{"u1", "u2", "u3"}, userTokens: []string{"t1", "t2", "t3"}}
	b := &bench{cfg: Config{Duration: 50 * time.Millisecond, CallTimeout: 10 * time.Second, SessionUsers: 3}, t: tg, trivial: echoTool}
	res, err := b.hold(context.Background(), 6)
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 3 || res.Answered != 6 {
		t.Errorf("got users %d answered %d, want 3 and 6", res.Users, res.Answered)
	}
	if got, want := inits(), map[string]int{"Bearer t1": 2, "Bearer t2": 2, "Bearer t3": 2}; !maps.Equal(got, want) {
		t.Errorf("got initializes by token %v, want %v", got, want)
	}

	// The closed loops' sessions are spread alike.
	if lr := b.load(context.Background(), echoTool, 3); lr.Errors != 0 {
		t.Fatalf("load: %s", lr.FirstError)
	}
	if got, want := inits(), map[string]int{"Bearer t1": 3, "Bearer t2": 3, "Bearer t3": 3}; !maps.Equal(got, want) {
		t.Errorf("after a closed loop of 3: got initializes by token %v, want %v", got, want)
	}

	// A system that cannot act as that many users holds sessions of its one.
	b.cfg.SessionUsers = 4
	res, err = b.hold(context.Background(), 2)
	if err != nil || res.Users != 1 || inits()["Bearer t0"] != 2 {
		t.Errorf("got users %d, initializes %v, error %v; want 1 user, its token twice", res.Users, inits(), err)
	}
}

func TestWarmStartsHoldASessionOpen(t *testing.T) {
	hs, inits := countingServer(t)
	tg := &httpTarget{client: testClient(), endpoint: hs.URL, procfs: pfs()}
	b := &bench{cfg: Config{CallTimeout: 10 * time.Second}, t: tg, trivial: echoTool}
	res := b.warmStarts(context.Background(), 3)
	if res.Errors != 0 || res.Latency.Count != 3 {
		t.Errorf("got %d starts, %d errors (%s), want 3 and none", res.Latency.Count, res.Errors, res.FirstError)
	}
	if got := inits()[""]; got != 4 {
		t.Errorf("got %d sessions opened, want 4 (the one held and 3 measured)", got)
	}

	broken := &bench{cfg: Config{CallTimeout: time.Second}, t: &httpTarget{client: testClient(), endpoint: "http://127.0.0.1:1/mcp", procfs: pfs()}, trivial: echoTool}
	if res := broken.warmStarts(context.Background(), 2); res.Errors != 2 || !strings.Contains(res.FirstError, "the session held open") {
		t.Errorf("got %+v, want every start failed on the held session", res)
	}
}

func TestMeasurePairAlternates(t *testing.T) {
	hs, _ := countingServer(t)
	tg := &httpTarget{client: testClient(), endpoint: hs.URL, procfs: pfs()}
	ctx := context.Background()
	a, err := tg.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := tg.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var res PairResult
	missing := echoTool
	missing.Name = "no-such-tool"
	measurePair(ctx, &res, pairSide{a, echoTool}, pairSide{b, echoTool}, 0, 100*time.Millisecond, 10*time.Second)
	if res.Calls == 0 || res.ALatency.Count != res.BLatency.Count || res.Errors != 0 || res.Tool != "echo" {
		t.Errorf("got %+v, want as many calls of each and no errors", res)
	}
	res = PairResult{}
	measurePair(ctx, &res, pairSide{a, echoTool}, pairSide{b, missing}, 0, 50*time.Millisecond, 10*time.Second)
	if res.Errors == 0 || res.BLatency.Count != 0 || res.Calls != 0 {
		t.Errorf("got %+v, want B's failures counted as errors, not calls", res)
	}
}

func TestCombinedName(t *testing.T) {
	for _, tt := range []struct {
		tools []string
		want  string
	}{
		{[]string{"status", "bench__query", "bench__status", "other__status"}, "bench__status"},
		{[]string{"other.status", "bench.status"}, "bench.status"},
		{[]string{"bench~~status"}, "bench~~status"},
		{[]string{"other__status", "status"}, ""},
	} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "combined", Version: "0"}, nil)
		for _, n := range tt.tools {
			srv.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		s, err := (&httpTarget{client: testClient(), endpoint: hs.URL}).open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, err := combinedName(context.Background(), s, "bench", "status")
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("tools %v: got %q, %v; want %q", tt.tools, got, err, tt.want)
		}
		s.Close()
		hs.Close()
	}
}

func TestDPoPTokenIsBound(t *testing.T) {
	iss, err := authtest.Start(authtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(iss.CertPEM())
	bearerTok, err := iss.Sign(iss.KeycloakClaims("carol", "https://gw.example/mcp", "mcp:use", "mcp:write"), authtest.SignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tg := &httpTarget{token: bearerTok, issuer: iss.URL, tls: &tls.Config{RootCAs: pool}}
	key, err := oauthclient.NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tg.dpopToken(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := jwtClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	cnf, _ := c["cnf"].(map[string]any)
	if cnf["jkt"] != key.Thumbprint() || c["preferred_username"] != "carol" || c["aud"] != "https://gw.example/mcp" || c["scope"] != "mcp:use mcp:write" {
		t.Errorf("got claims %v, want carol's, for the gateway, bound to the key %s", c, key.Thumbprint())
	}

	// An issuer that answers with an unbound token is an error, not a
	// Bearer call measured as a DPoP one.
	plain := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"access_token": "x", "token_type": "Bearer"})
	}))
	defer plain.Close()
	tg.issuer, tg.tls = plain.URL, plain.Client().Transport.(*http.Transport).TLSClientConfig
	if _, err := tg.dpopToken(context.Background(), key); err == nil || !strings.Contains(err.Error(), "did not bind") {
		t.Errorf("got %v, want the unbound token refused", err)
	}
	if _, err := jwtClaims("not-a-jwt"); err == nil {
		t.Error("a token that is no JWT: got no error")
	}
}

func TestPairTable(t *testing.T) {
	r := &Run{Pairs: []PairResult{
		{Name: pairDPoP, A: "Bearer", B: "DPoP", Tool: "status", Calls: 100,
			ALatency: Summary{Count: 100, P50: 1000 * time.Microsecond}, BLatency: Summary{Count: 100, P50: 1382 * time.Microsecond},
			ClientWork: 61 * time.Microsecond},
		{Name: pairLocal, A: "TCP", B: "shim + socket", Tool: "status", Calls: 50,
			ALatency: Summary{Count: 50, P50: 900 * time.Microsecond}, BLatency: Summary{Count: 50, P50: 850 * time.Microsecond},
			SecondClient: &ProcessSteps{Before: 3, First: 4, Second: 4}},
		{Name: pairCombined, Skipped: "no servers list"},
	}}
	got := pairTable(r)
	for _, want := range []string{"| dpop  | status |", "+382", "1.38×", "-50 |", "61 µs is the client's own work", "the second started 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("pair table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "combined") {
		t.Errorf("a skipped pair has a row:\n%s", got)
	}
	if notes := tableNotes(r); !strings.Contains(notes, "pair combined: skipped — no servers list") {
		t.Errorf("notes lack the skipped pair:\n%s", notes)
	}
	recs := CSVRecords(r)
	var figs []string
	for _, rec := range recs[1:] {
		figs = append(figs, rec[0]+" "+rec[2]+"="+rec[4])
	}
	for _, want := range []string{"pair:dpop b_minus_a_p50=382.0", "pair:local second_client_new_processes=0"} {
		if !slices.Contains(figs, want) {
			t.Errorf("CSV lacks %q: %v", want, figs)
		}
	}
	if pairTable(&Run{}) != "" {
		t.Error("no pairs: got a table")
	}
}

// runFakeGateway stands in for a gateway the pairs start: the stand-in
// tools at /mcp/bench, and at /mcp a combined endpoint knowing echo as
// bench__echo, on addr (host:port, or unix:PATH).
func runFakeGateway(addr string) error {
	network := "tcp"
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", p
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	named := newToolServer("bench")
	combined := mcp.NewServer(&mcp.Implementation{Name: "combined", Version: "0"}, nil)
	combined.AddTool(&mcp.Tool{Name: "bench__echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp/bench", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return named }, nil))
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return combined }, nil))
	return http.Serve(ln, mux)
}

func TestCombinedAndLocalPairs(t *testing.T) {
	hs, _ := countingServer(t)
	self := os.Args[0]
	helper := []string{"MCPBENCH_TEST_HELPER=1"}
	cfg := Config{Trivial: echoTool, Duration: 50 * time.Millisecond, CallTimeout: 10 * time.Second, Skip: map[string]string{},
		Pairs:   []string{pairCombined, pairLocal, pairDPoP},
		Servers: []string{self, "fake-gateway", "{addr}"}, ServersEnv: helper, ServersName: "bench",
		LocalDaemon: []string{self, "fake-gateway", "unix:{socket}"},
		// The shim: the stand-in worker over stdio (it does not reach the
		// socket, but the pair's plumbing is what is tested here).
		LocalShim:  []string{self},
		MCPGateEnv: []string{"MCPBENCH_TEST_HELPER=1", "MCPBENCH_TEST_STDIO_SERVER=1"},
	}
	pe := pairEnv{cfg: cfg, client: testClient(), logDir: t.TempDir(),
		running: map[string]target{sysMCPGate: &httpTarget{client: testClient(), endpoint: hs.URL, procfs: pfs()}}}
	got := runPairs(context.Background(), pe, io.Discard)
	if len(got) != 3 {
		t.Fatalf("got %d pairs, want 3", len(got))
	}
	comb, local, dpop := got[0], got[1], got[2]
	if comb.Skipped != "" || comb.Errors != 0 || comb.Calls == 0 || comb.A != "/mcp/bench" || comb.B != "/mcp" {
		t.Errorf("combined: got %+v", comb)
	}
	if local.Skipped != "" || local.Errors != 0 || local.Calls == 0 || local.SecondClient == nil ||
		local.SecondClient.Before != 1 || local.SecondClient.Second != 1 {
		t.Errorf("local: got %+v (second client %+v)", local, local.SecondClient)
	}
	if !strings.Contains(dpop.Skipped, "mcpgate-tls") {
		t.Errorf("dpop without the TLS system: got %+v, want it skipped with the reason", dpop)
	}

	// What bench.sh says is missing is the reason given.
	pe.cfg.Skip = map[string]string{pairCombined: "no servers list here"}
	pe.cfg.Pairs = []string{pairCombined}
	pe.cfg.Servers = nil
	if got := runPairs(context.Background(), pe, io.Discard); got[0].Skipped != "no servers list here" {
		t.Errorf("got %+v, want the skip reason given", got[0])
	}
}
