// Package metrics exports the gateway's metrics in the Prometheus text
// format, with github.com/prometheus/client_golang: the registry, counters
// and histograms, the /metrics handler and the HTTP instrumentation.
//
// Every label value is bounded: methods, status codes, worker kinds, exit
// reasons, refusal reasons and outcome kinds come from fixed sets; tool
// names are kept for tools the operator knows (Options.Tools) and at most
// MaxToolLabels others that answered with a result, the rest count as
// "other". No user, client, session or request id is ever a label.
package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/gateway"
)

// MaxToolLabels bounds the tool names, beyond Options.Tools, that get a
// label of their own.
const MaxToolLabels = 100

// Other is the label value of what is not in a bounded set.
const Other = "other"

// Options configure Metrics.
type Options struct {
	// Tools are tool names that always get their own label (the built-in
	// toolsets' tools, worker.safe_tools).
	Tools []string
	// Sandbox is the worker sandbox profile every worker of this gateway
	// starts under: SandboxBuiltin, SandboxExternal or SandboxNone (the
	// default, and what any other value counts as).
	Sandbox string
	// Servers are the configured names of the servers of a servers list
	// (gateway.CallEvent.Server): each gets its series of
	// mcpgate_server_tool_calls_total. None: the one server at /mcp, and
	// no such series.
	Servers []string
}

// The sandbox profiles a worker starts under, the values of
// mcpgate_worker_sandbox_starts_total's profile label.
const (
	SandboxBuiltin  = "builtin"
	SandboxExternal = "external"
	SandboxNone     = "none"
)

// Metrics is the gateway's metrics: a gateway.Observer, HTTP middleware and
// the /metrics handler.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	workerStarts  *prometheus.CounterVec
	workerExits   *prometheus.CounterVec
	workerStartup *prometheus.HistogramVec
	sandboxStarts *prometheus.CounterVec
	sandbox       string // the profile label of every worker start
	toolCalls     *prometheus.CounterVec
	serverCalls   *prometheus.CounterVec // by server; registered with Options.Servers
	servers       map[string]bool        // Options.Servers
	refusals      *prometheus.CounterVec
	authRefusals  *prometheus.CounterVec
	issuerFetches *prometheus.CounterVec
	auditFailures prometheus.Counter
	exchanges     *prometheus.CounterVec

	mu    sync.Mutex
	tools map[string]bool // names with a label of their own
	extra int             // of which not from Options.Tools
}

// New returns the metrics, registered with a fresh registry together with
// the Go runtime and process collectors.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_http_requests_total",
			Help: "HTTP requests served on the main listener, by method and status code.",
		}, []string{"method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpgate_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request on the main listener, to the end of its response (an SSE stream's whole life).",
			Buckets: prometheus.DefBuckets,
		}, []string{"method"}),
		workerStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_worker_starts_total",
			Help: "Workers started and ready, by kind (session, user) and start (pooled: pre-started and claimed; cold: started for its session).",
		}, []string{"kind", "start"}),
		workerExits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_worker_exits_total",
			Help: "Workers gone, by kind and reason (crashed, limit, replaced, deleted, idle, shutdown, startFailed).",
		}, []string{"kind", "reason"}),
		workerStartup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpgate_worker_start_duration_seconds",
			Help:    "Time from starting a worker process (claiming a pre-started one) to its answer to the first request, by kind and start (pooled, cold).",
			Buckets: []float64{.0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"kind", "start"}),
		sandboxStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_worker_sandbox_starts_total",
			Help: "Workers started and ready, by the sandbox profile they run under (builtin, external, none).",
		}, []string{"profile"}),
		sandbox: sandboxLabel(opts.Sandbox),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_tool_calls_total",
			Help: "tools/call requests settled, by tool and outcome (ok, a tool error kind, a gateway error kind, a JSON-RPC error code, cancelled, refused).",
		}, []string{"tool", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_refusals_total",
			Help: "Requests the gateway refused, by reason: readOnly, policy, bufferFull, the HTTP status of a limit (408, 413, 429, 503), or a connection limit (maxConnections, maxUnauthenticatedPerAddress, maxConnectionsPerPrincipal).",
		}, []string{"reason"}),
		authRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_auth_refusals_total",
			Help: "Requests refused by the token check, by the check that failed.",
		}, []string{"check"}),
		issuerFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_issuer_fetches_total",
			Help: "Fetches from the authorization server, by document (discovery, jwks) and result (ok, error).",
		}, []string{"document", "result"}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpgate_audit_write_failures_total",
			Help: "Audit events that could not be written to audit.path.",
		}),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_credential_exchanges_total",
			Help: "Token exchanges (RFC 8693) for users' downstream credentials, by result: ok, refused (the issuer said no), error (it could not be asked or answered wrongly), backoff (a failure repeated without asking, during the backoff).",
		}, []string{"result"}),
		tools: make(map[string]bool, len(opts.Tools)),
		serverCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_server_tool_calls_total",
			Help: "tools/call requests settled, by configured server (servers list) and outcome, as mcpgate_tool_calls_total.",
		}, []string{"server", "outcome"}),
		servers: make(map[string]bool, len(opts.Servers)),
	}
	for _, s := range opts.Servers {
		m.servers[s] = true
		m.serverCalls.WithLabelValues(s, "ok")
	}
	if len(opts.Servers) > 0 {
		m.reg.MustRegister(m.serverCalls)
	}
	for _, t := range opts.Tools {
		m.tools[t] = true
	}
	m.zeroSeries()
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.workerStarts, m.workerExits, m.workerStartup,
		m.sandboxStarts, m.toolCalls, m.refusals, m.authRefusals, m.issuerFetches, m.auditFailures, m.exchanges,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Exit reasons and refusal reasons: the label values Metrics gives.
var (
	exitReasons    = []string{gateway.ExitCrashed, gateway.ExitLimit, gateway.ExitReplaced, gateway.ExitDeleted, gateway.ExitIdle, gateway.ExitShutdown, gateway.ExitStartFailed, Other}
	refusalReasons = []string{"readOnly", "policy", "bufferFull", "408", "413", "429", "503", gateway.RefusedConnections, gateway.RefusedUnauthenticated, Other}
)

// zeroSeries creates every series of a bounded counter with the value 0,
// so that each exists before its first event: an alert on increase() or
// rate() needs two samples, and a series that first appears at 1 shows no
// increase, so a first event (one worker over a limit, one bufferFull)
// would never fire it.
func (m *Metrics) zeroSeries() {
	for _, kind := range []string{gateway.WorkerSession, gateway.WorkerUser} {
		for _, reason := range exitReasons {
			m.workerExits.WithLabelValues(kind, reason)
		}
	}
	for _, reason := range refusalReasons {
		m.refusals.WithLabelValues(reason)
	}
	m.sandboxStarts.WithLabelValues(m.sandbox)
	for _, check := range auth.Reasons() {
		m.authRefusals.WithLabelValues(check)
	}
	for _, result := range exchangeResults {
		m.exchanges.WithLabelValues(result)
	}
	for _, doc := range []string{"discovery", "jwks"} {
		for _, result := range []string{"ok", "error"} {
			m.issuerFetches.WithLabelValues(doc, result)
		}
	}
}

// exchangeResults are the results CredentialExchange counts.
var exchangeResults = []string{"ok", "refused", "error", "backoff"}

// CredentialExchange counts one token exchange by its result
// (credential.ExchangeOptions.Observe); an unknown result counts as Other.
func (m *Metrics) CredentialExchange(result string) {
	if !slices.Contains(exchangeResults, result) {
		result = Other
	}
	m.exchanges.WithLabelValues(result).Inc()
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Middleware counts and times the requests of next. Unknown methods count
// as "unknown" (promhttp), so the method label stays bounded.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return promhttp.InstrumentHandlerCounter(m.httpRequests,
		promhttp.InstrumentHandlerDuration(m.httpDuration, next))
}

// Live exports the gateway's live sessions and workers, read at each
// scrape.
func (m *Metrics) Live(g interface {
	Sessions() int
	Workers(kind string) int
}) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcpgate_sessions",
		Help: "Live MCP sessions (protocol 2025-11-25 and earlier).",
	}, func() float64 { return float64(g.Sessions()) }))
	for _, kind := range []string{gateway.WorkerSession, gateway.WorkerUser} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "mcpgate_workers",
			Help:        "Live worker processes, by kind (session, user).",
			ConstLabels: prometheus.Labels{"kind": kind},
		}, func() float64 { return float64(g.Workers(kind)) }))
	}
}

// CertificateExpiry exports the expiry of the served certificate, read at
// each scrape (zero: not exported then).
func (m *Metrics) CertificateExpiry(notAfter func() time.Time) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcpgate_tls_certificate_expiry_timestamp_seconds",
		Help: "When the served TLS certificate expires, in Unix seconds.",
	}, func() float64 {
		if t := notAfter(); !t.IsZero() {
			return float64(t.Unix())
		}
		return 0
	}))
}

// Call counts a settled tools/call or a refusal (gateway.Observer).
func (m *Metrics) Call(e *gateway.CallEvent) {
	switch {
	case e.Decision == gateway.DecisionReadOnly:
		m.refusals.WithLabelValues("readOnly").Inc()
	case e.Decision == gateway.DecisionPolicy:
		m.refusals.WithLabelValues("policy").Inc()
	case e.Decision == gateway.DecisionLimit:
		m.refusals.WithLabelValues(statusReason(e.Status)).Inc()
	case e.ErrorKind == "bufferFull":
		m.refusals.WithLabelValues("bufferFull").Inc()
	}
	if e.Tool != "" || strings.EqualFold(e.Method, "tools/call") {
		m.toolCalls.WithLabelValues(m.toolLabel(e), outcomeLabel(e)).Inc()
		if m.servers[e.Server] {
			m.serverCalls.WithLabelValues(e.Server, outcomeLabel(e)).Inc()
		}
	}
}

// WorkerStarted counts a worker ready (gateway.Observer).
func (m *Metrics) WorkerStarted(kind string, pooled bool, took time.Duration) {
	kind, start := kindLabel(kind), "cold"
	if pooled {
		start = "pooled"
	}
	m.workerStarts.WithLabelValues(kind, start).Inc()
	m.workerStartup.WithLabelValues(kind, start).Observe(took.Seconds())
	m.sandboxStarts.WithLabelValues(m.sandbox).Inc()
}

// sandboxLabel bounds Options.Sandbox to the three profiles.
func sandboxLabel(profile string) string {
	switch profile {
	case SandboxBuiltin, SandboxExternal:
		return profile
	}
	return SandboxNone
}

// WorkerExited counts a worker gone (gateway.Observer).
func (m *Metrics) WorkerExited(kind, reason string) {
	if !slices.Contains(exitReasons, reason) {
		reason = Other
	}
	m.workerExits.WithLabelValues(kindLabel(kind), reason).Inc()
}

// ConnectionRefused counts a connection refused by a listener limit
// (gateway.ListenerOptions.OnRefused).
func (m *Metrics) ConnectionRefused(limit string) {
	switch limit {
	case gateway.RefusedConnections, gateway.RefusedUnauthenticated, gateway.RefusedPerPrincipal:
	default:
		limit = Other
	}
	m.refusals.WithLabelValues(limit).Inc()
}

// AuthRefused counts a request the token check refused; check is
// auth.Reason's name of the failed check.
func (m *Metrics) AuthRefused(check string) { m.authRefusals.WithLabelValues(check).Inc() }

// AuditWriteFailed counts an audit event the file could not take.
func (m *Metrics) AuditWriteFailed() { m.auditFailures.Inc() }

// IssuerTransport wraps rt (nil: http.DefaultTransport) to count fetches
// from the authorization server: the discovery document (a path under
// /.well-known/) and the rest, its keys.
func (m *Metrics) IssuerTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		doc := "jwks"
		if strings.Contains(r.URL.Path, "/.well-known/") {
			doc = "discovery"
		}
		resp, err := rt.RoundTrip(r)
		result := "ok"
		if err != nil || resp.StatusCode >= 300 {
			result = "error"
		}
		m.issuerFetches.WithLabelValues(doc, result).Inc()
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// toolLabel is the event's tool, or Other: a name the operator listed, or
// one of the first MaxToolLabels names that reached a tool (the worker did
// not answer with a JSON-RPC error, such as an unknown tool's).
func (m *Metrics) toolLabel(e *gateway.CallEvent) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.tools[e.Tool]:
		return e.Tool
	case e.Tool == "" || e.ErrorCode != 0 || e.Decision != gateway.DecisionAllowed || m.extra >= MaxToolLabels:
		return Other
	}
	m.tools[e.Tool] = true
	m.extra++
	return e.Tool
}

// toolKinds are the tool error kinds of docs/tools.md; gatewayKinds the
// error kinds of the gateway's own answers.
var (
	toolKinds    = set("invalidParams", "notFound", "refused", "readOnly", "sqlError", "conflict", "other", "toolError")
	gatewayKinds = set("workerExited", "sessionEnded", "bufferFull", "readOnly", "noStream")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// outcomeLabel bounds an event's outcome: ok, cancelled, refused,
// inputRequired, a known
// tool error kind (else "toolError"), a known gateway error kind, or a
// JSON-RPC error code in the reserved range (else "error").
func outcomeLabel(e *gateway.CallEvent) string {
	switch {
	case e.Outcome == gateway.OutcomeOK, e.Outcome == gateway.OutcomeCancelled, e.Outcome == gateway.OutcomeRefused,
		e.Outcome == gateway.OutcomeInputRequired:
		return e.Outcome
	case e.ErrorCode == 0 && toolKinds[e.Outcome]:
		return e.Outcome
	case e.ErrorCode == 0:
		return "toolError"
	case gatewayKinds[e.ErrorKind]:
		return e.ErrorKind
	case e.ErrorCode >= -32768 && e.ErrorCode <= -32000:
		return strconv.Itoa(e.ErrorCode)
	}
	return "error"
}

func statusReason(status int) string {
	switch status {
	case http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return strconv.Itoa(status)
	}
	return Other
}

func kindLabel(kind string) string {
	if kind == gateway.WorkerSession || kind == gateway.WorkerUser {
		return kind
	}
	return Other
}
