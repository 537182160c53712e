package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/metrics"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/worker/workertest"
)

var stubWorker string

func TestMain(m *testing.M) {
	os.Exit(workertest.Main(m, map[string]*string{workertest.Stub: &stubWorker}))
}

func stubLauncher(t *testing.T) *worker.Launcher {
	t.Helper()
	l, err := worker.NewLauncher([]string{stubWorker}, worker.LauncherOptions{StopGrace: 2 * time.Second})
	require.NoError(t, err)
	return l
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// scrape fetches url and parses it with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// values maps each series of a family to its value (a counter's, a
// gauge's, a histogram's sample count), keyed by its labels as
// name=value pairs joined by commas.
func values(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		var labels []string
		for _, l := range m.Label {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(labels)
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		}
		out[strings.Join(labels, ",")] = v
	}
	return out
}

// counted is values without the series still at 0 (a bounded counter's
// series exist from the start).
func counted(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := values(fams, name)
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// TestAlertedSeriesStartAtZero: every series of a bounded counter exists
// at 0 before its first event, so that increase() and rate() see that
// event: the alerts on worker exits, refusals, token checks and issuer
// fetches fire on a first one (deploy/prometheus/alerts_test.yml).
func TestAlertedSeriesStartAtZero(t *testing.T) {
	mx := httptest.NewServer(metrics.New(metrics.Options{}).Handler())
	defer mx.Close()
	fams := scrape(t, mx.URL)
	for name, series := range map[string][]string{
		"mcpgate_worker_exits_total": {"kind=session,reason=limit", "kind=user,reason=limit", "kind=user,reason=crashed", "kind=session,reason=startFailed"},
		"mcpgate_refusals_total":     {"reason=bufferFull", "reason=429", "reason=503", "reason=readOnly", "reason=policy"},
		"mcpgate_auth_refusals_total": {"check=unavailable", "check=signature", "check=audience", "check=issuer", "check=unknownKey",
			"check=algorithm"},
		"mcpgate_issuer_fetches_total": {"document=jwks,result=error", "document=discovery,result=error"},
	} {
		got := values(fams, name)
		for _, s := range series {
			v, ok := got[s]
			assert.True(t, ok && v == 0, "%s{%s} is not exported at 0 before its first event: %v", name, s, got)
		}
	}
}

type client struct {
	t      *testing.T
	url    string
	status map[string]float64 // "method=post,code=200" → requests sent
}

func (c *client) do(method, sid, body string) (*http.Response, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("MCP-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	c.status["code="+strconv.Itoa(resp.StatusCode)+",method="+strings.ToLower(method)]++
	return resp, m
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func (c *client) open() string {
	c.t.Helper()
	resp, m := c.do(http.MethodPost, "", initBody)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "%v", m)
	sid := resp.Header.Get("MCP-Session-Id")
	resp, _ = c.do(http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(c.t, http.StatusAccepted, resp.StatusCode)
	return sid
}

func (c *client) call(sid, id, tool string) map[string]any {
	c.t.Helper()
	_, m := c.do(http.MethodPost, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":{"text":"x","code":3}}}`, id, tool))
	return m
}

// serve runs a gateway with opts on the stub worker, observed by m and
// behind its HTTP middleware, and m's /metrics; it returns both URLs.
func serve(t *testing.T, m *metrics.Metrics, opts gateway.Options) (g *gateway.Gateway, url, metricsURL string) {
	t.Helper()
	opts.Logger = quiet
	opts.Observers = []gateway.Observer{m}
	g, err := gateway.New(stubLauncher(t), opts)
	require.NoError(t, err)
	m.Live(g)
	srv := httptest.NewServer(m.Middleware(g))
	mx := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		mx.Close()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, g.Close(ctx))
	})
	return g, srv.URL, mx.URL
}

// TestScrapeAfterKnownTraffic: /metrics, parsed with the
// Prometheus text parser, counts exactly the traffic sent.
func TestScrapeAfterKnownTraffic(t *testing.T) {
	m := metrics.New(metrics.Options{Tools: []string{"echo", "write", "crash"}})
	g, url, mx := serve(t, m, gateway.Options{ReadOnly: true, SafeTools: []string{"echo", "crash"}, MaxSessionsPerUser: 2})

	c := &client{t: t, url: url, status: map[string]float64{}}
	a, b := c.open(), c.open()
	require.NotNil(t, c.call(a, "1", "echo")["result"])
	require.NotNil(t, c.call(a, "2", "echo")["result"])
	require.NotNil(t, c.call(b, "3", "write")["error"], "read-only refusal")
	require.NotNil(t, c.call(b, "4", "nosuchtool")["error"], "read-only refusal of a name nobody listed")
	// Both sessions in use (a GET stream each), so the third is refused
	// rather than made room for by ending an idle one.
	hold := func(sid string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp
	}
	ga, gb := hold(a), hold(b)
	resp, _ := c.do(http.MethodPost, "", initBody)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotNil(t, c.call(a, "5", "crash")["error"], "the worker exits")
	resp, _ = c.do(http.MethodDelete, b, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The sessions' end ends their streams.
	_, _ = io.Copy(io.Discard, ga.Body)
	_, _ = io.Copy(io.Discard, gb.Body)
	ga.Body.Close()
	gb.Body.Close()
	c.status["code=200,method=get"] += 2
	require.Eventually(t, func() bool {
		return values(scrape(t, mx), "mcpgate_http_request_duration_seconds")["method=get"] == 2
	}, 10*time.Second, 5*time.Millisecond, "the GET streams' requests are counted once they end")
	require.Zero(t, g.Sessions(), "the crash and the DELETE have ended both sessions")

	fams := scrape(t, mx)
	assert.Equal(t, map[string]float64{
		"outcome=ok,tool=echo":            2,
		"outcome=readOnly,tool=write":     1,
		"outcome=readOnly,tool=other":     1,
		"outcome=workerExited,tool=crash": 1,
	}, values(fams, "mcpgate_tool_calls_total"))
	assert.Equal(t, map[string]float64{"reason=readOnly": 2, "reason=429": 1}, counted(fams, "mcpgate_refusals_total"))
	assert.Equal(t, map[string]float64{"kind=session,start=cold": 2}, values(fams, "mcpgate_worker_starts_total"))
	assert.Equal(t, map[string]float64{"kind=session,start=cold": 2}, values(fams, "mcpgate_worker_start_duration_seconds"))
	assert.Equal(t, map[string]float64{"kind=session,reason=crashed": 1, "kind=session,reason=deleted": 1},
		counted(fams, "mcpgate_worker_exits_total"))
	assert.Equal(t, map[string]float64{"": 0}, values(fams, "mcpgate_sessions"))
	assert.Equal(t, map[string]float64{"kind=session": 0, "kind=user": 0}, values(fams, "mcpgate_workers"))
	assert.Equal(t, c.status, values(fams, "mcpgate_http_requests_total"))
	total := 0.0
	for _, n := range c.status {
		total += n
	}
	assert.Equal(t, map[string]float64{"method=post": total - 3, "method=delete": 1, "method=get": 2}, values(fams, "mcpgate_http_request_duration_seconds"))
	assert.Equal(t, map[string]float64{"": 0}, values(fams, "mcpgate_audit_write_failures_total"))
	for name := range fams {
		for _, s := range fams[name].Metric {
			for _, l := range s.Label {
				assert.NotContains(t, l.GetValue(), a, "a session id as a label")
			}
		}
	}
}

// TestLiveGauges: live sessions and workers are read at each scrape.
func TestLiveGauges(t *testing.T) {
	m := metrics.New(metrics.Options{})
	_, url, mx := serve(t, m, gateway.Options{})
	c := &client{t: t, url: url, status: map[string]float64{}}
	c.open()
	c.open()
	fams := scrape(t, mx)
	assert.Equal(t, map[string]float64{"": 2}, values(fams, "mcpgate_sessions"))
	assert.Equal(t, map[string]float64{"kind=session": 2, "kind=user": 0}, values(fams, "mcpgate_workers"))
}

// TestAuthAndIssuerMetrics: each refused token counts under the check that
// failed; fetches from the issuer count by document.
func TestAuthAndIssuerMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	iss := authtest.New(t)
	hc := iss.Client()
	hc.Transport = m.IssuerTransport(hc.Transport)
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: iss.URL, Resource: "https://mcp.example.test/mcp", RequiredScopes: []string{"mcp:use"},
		HTTPClient: hc, Logger: quiet, OnRefused: m.AuthRefused,
	})
	require.NoError(t, err)
	defer a.Close()
	select {
	case <-a.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the authenticator never loaded the issuer's keys")
	}
	srv := httptest.NewServer(a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	send := func(tok string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	claims := iss.KeycloakClaims("alice", "https://mcp.example.test/mcp", "mcp:use")
	claims["exp"] = time.Now().Add(-time.Hour).Unix()
	expired, err := iss.Sign(claims, authtest.SignOptions{})
	require.NoError(t, err)
	noScope, err := iss.Sign(iss.KeycloakClaims("alice", "https://mcp.example.test/mcp"), authtest.SignOptions{})
	require.NoError(t, err)
	send("")
	send(expired)
	send(expired)
	send(noScope)
	send("not-a-jwt")

	mx := httptest.NewServer(m.Handler())
	defer mx.Close()
	fams := scrape(t, mx.URL)
	assert.Equal(t, map[string]float64{"check=noToken": 1, "check=expired": 2, "check=missingScope": 1, "check=malformed": 1},
		counted(fams, "mcpgate_auth_refusals_total"))
	fetches := values(fams, "mcpgate_issuer_fetches_total")
	assert.GreaterOrEqual(t, fetches["document=discovery,result=ok"], 1.0, "%v", fetches)
	assert.GreaterOrEqual(t, fetches["document=jwks,result=ok"], 1.0, "%v", fetches)
	assert.Zero(t, fetches["document=jwks,result=error"]+fetches["document=discovery,result=error"], "%v", fetches)
}

type fakeLive struct{}

func (fakeLive) Sessions() int      { return 0 }
func (fakeLive) Workers(string) int { return 0 }

// TestDocsAndAlertsNameRealMetrics keeps docs/operations.md and
// deploy/prometheus/ in step with the code: every metric exported is
// documented, and every mcpgate_ metric the docs or the alert rules name
// exists; the deploy files are valid YAML.
func TestDocsAndAlertsNameRealMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{Servers: []string{"db"}}) // with a servers list: every family
	m.Live(fakeLive{})
	m.CertificateExpiry(time.Now)
	m.Call(&gateway.CallEvent{Method: "tools/call", Tool: "t", Decision: gateway.DecisionLimit, Status: 429, Outcome: gateway.OutcomeRefused})
	m.WorkerStarted(gateway.WorkerSession, false, time.Second)
	m.WorkerExited(gateway.WorkerSession, gateway.ExitCrashed)
	m.AuthRefused("expired")
	m.AuditWriteFailed()
	rt := m.IssuerTransport(roundTrip(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}))
	_, _ = rt.RoundTrip(httptest.NewRequest(http.MethodGet, "https://issuer.example/keys", nil))
	srv := httptest.NewServer(m.Middleware(http.NotFoundHandler()))
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	srv.Close()
	mx := httptest.NewServer(m.Handler())
	defer mx.Close()
	exported := map[string]bool{}
	for name := range scrape(t, mx.URL) {
		if strings.HasPrefix(name, "mcpgate_") {
			exported[name] = true
		}
	}
	require.Len(t, exported, 16)

	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	require.NoError(t, err)
	for name := range exported {
		assert.Contains(t, string(doc), "`"+name+"`", "docs/operations.md does not document %s", name)
	}
	named := regexp.MustCompile(`mcpgate_[a-z_]+`)
	for _, f := range []string{"../docs/operations.md", "../deploy/prometheus/alerts.yml", "../deploy/prometheus/prometheus.yml"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.HasSuffix(f, ".yml") {
			var v any
			require.NoError(t, yaml.Unmarshal(data, &v), f)
		}
		for _, n := range named.FindAllString(string(data), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")
			assert.True(t, exported[base], "%s names %s, which is not exported", f, n)
		}
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestScrapeModern: 2026-07-28 calls count the same, their per-user worker
// under kind user.
func TestScrapeModern(t *testing.T) {
	m := metrics.New(metrics.Options{Tools: []string{"echo"}})
	_, url, mx := serve(t, m, gateway.Options{})
	for _, id := range []string{"1", "2"} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	fams := scrape(t, mx)
	assert.Equal(t, map[string]float64{"outcome=ok,tool=echo": 2}, values(fams, "mcpgate_tool_calls_total"))
	assert.Equal(t, map[string]float64{"kind=user,start=cold": 1}, values(fams, "mcpgate_worker_starts_total"))
	assert.Equal(t, map[string]float64{"kind=session": 0, "kind=user": 1}, values(fams, "mcpgate_workers"))
}

// TestConnectionRefusals: connections a listener limit refuses are
// counted by the limit.
func TestConnectionRefusals(t *testing.T) {
	m := metrics.New(metrics.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ll := gateway.LimitListener(ln, gateway.ListenerOptions{MaxConnections: 1, OnRefused: m.ConnectionRefused})
	defer ll.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ll.Accept() // the first; Accept refuses the second itself
		if err == nil {
			accepted <- c
		}
		_, _ = ll.Accept()
	}()
	first, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer first.Close()
	defer func() { (<-accepted).Close() }()
	second, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer second.Close()
	status, err := bufio.NewReader(second).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 503 Service Unavailable\r\n", status)

	mx := httptest.NewServer(m.Handler())
	defer mx.Close()
	assert.Equal(t, map[string]float64{"reason=maxConnections": 1}, counted(scrape(t, mx.URL), "mcpgate_refusals_total"))
}

// TestWorkerStartedPooled: a pre-started worker's start is labelled apart
// from a cold one, with two label values only.
func TestWorkerStartedPooled(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.WorkerStarted(gateway.WorkerSession, true, time.Millisecond)
	m.WorkerStarted(gateway.WorkerSession, false, 20*time.Millisecond)
	m.WorkerStarted(gateway.WorkerUser, true, time.Millisecond)
	mx := httptest.NewServer(m.Handler())
	defer mx.Close()
	fams := scrape(t, mx.URL)
	want := map[string]float64{"kind=session,start=cold": 1, "kind=session,start=pooled": 1, "kind=user,start=pooled": 1}
	assert.Equal(t, want, values(fams, "mcpgate_worker_starts_total"))
	assert.Equal(t, want, values(fams, "mcpgate_worker_start_duration_seconds"))
}

// TestWorkerSandboxStarts: each worker start is counted under the sandbox
// profile of the gateway's workers; the label has three values only, and
// the series exists at 0 before the first start.
func TestWorkerSandboxStarts(t *testing.T) {
	for _, tc := range []struct{ profile, want string }{
		{metrics.SandboxBuiltin, "builtin"},
		{metrics.SandboxExternal, "external"},
		{metrics.SandboxNone, "none"},
		{"", "none"},
		{"a user's words", "none"},
	} {
		m := metrics.New(metrics.Options{Sandbox: tc.profile})
		mx := httptest.NewServer(m.Handler())
		assert.Equal(t, map[string]float64{"profile=" + tc.want: 0}, values(scrape(t, mx.URL), "mcpgate_worker_sandbox_starts_total"), "%q before a start", tc.profile)
		m.WorkerStarted(gateway.WorkerSession, false, time.Millisecond)
		m.WorkerStarted(gateway.WorkerUser, true, time.Millisecond)
		assert.Equal(t, map[string]float64{"profile=" + tc.want: 2}, values(scrape(t, mx.URL), "mcpgate_worker_sandbox_starts_total"), "%q", tc.profile)
		mx.Close()
	}
}

// TestServerCalls: with a servers list, tool calls are counted by server
// too, for the configured names only (the label stays bounded), and a
// gateway without one has no such series.
func TestServerCalls(t *testing.T) {
	m := metrics.New(metrics.Options{Servers: []string{"db", "ev"}})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	for _, server := range []string{"db", "db", "ev", "unconfigured", ""} {
		m.Call(&gateway.CallEvent{Server: server, Method: "tools/call", Tool: "echo", Decision: gateway.DecisionAllowed, Outcome: gateway.OutcomeOK})
	}
	assert.Equal(t, map[string]float64{"outcome=ok,server=db": 2, "outcome=ok,server=ev": 1},
		values(scrape(t, srv.URL), "mcpgate_server_tool_calls_total"))

	one := metrics.New(metrics.Options{})
	srv1 := httptest.NewServer(one.Handler())
	defer srv1.Close()
	one.Call(&gateway.CallEvent{Server: "db", Method: "tools/call", Tool: "echo", Decision: gateway.DecisionAllowed, Outcome: gateway.OutcomeOK})
	assert.NotContains(t, scrape(t, srv1.URL), "mcpgate_server_tool_calls_total")
}
