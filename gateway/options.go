package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"os/user"
	"time"

	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/options"
	"github.com/mcpgate/mcpgate/worker"
)

// Options configure a Gateway's HTTP side: its checks, limits and sessions.
// How a worker starts is the worker.Launcher's business. The zero value is a
// safe default: nothing read-only-safe, loopback origins only.
type Options struct {
	// Server is the configured name of the MCP server this gateway
	// serves at /mcp/<name> (one Gateway per server); "" for the one
	// server at /mcp. It is part of every worker's key, and CallEvent.Server,
	// a bounded label: configured names only.
	Server string

	// SafeTools names the tools a read-only session may see and call. It is
	// fail-closed: a tool not listed is hidden from tools/list and refused by
	// tools/call in a read-only session. Empty means no tool is safe.
	SafeTools []string
	// UndoTools names the safe tools that discard or end a session's own
	// work (the built-in abort). A read-only request on a read-write
	// session (its token lacks the write scope) is refused them: it must not
	// undo what write requests did there. In a read-only session there is
	// nothing to undo, and SafeTools alone decides.
	UndoTools []string
	// SafeMethods names methods beyond MCP's read methods (see ReadMethods)
	// that a read-only request may send, for an external worker's own
	// read-only methods. Fail-closed: any other method from a read-only
	// request is refused with data.kind "readOnly" and never reaches the
	// worker. tools/call and tools/list are decided per tool whatever it
	// says.
	SafeMethods []string
	// ReadOnly makes every session read-only (the router-wide switch).
	ReadOnly bool

	// ReplicaID names this gateway among identical replicas behind one load
	// balancer; it starts every legacy session id and every per-user
	// worker's instance id (and so its transaction handles), so the load
	// balancer can send a request to the replica that holds its session or
	// transaction (see workerproto.ReplicaSeparator). Empty means a single gateway: ids
	// without a prefix. CheckReplicaID says what is valid.
	ReplicaID string

	// Credentials, when set, obtains each user's own downstream
	// credentials for the workers of this server (worker.credentials):
	// a worker starts with its user's alone, a per-user worker holding
	// one that is due for renewal is replaced between calls, and a
	// session on such a worker ends then. Nil: none.
	Credentials *credential.Broker

	// LocalUser is the user id of sessions opened without a verified
	// principal (the unauthenticated localhost mode). Empty means the OS
	// user running the gateway.
	LocalUser string

	// AllowedOrigins lists the Origin values accepted beyond loopback ones,
	// each either a full origin ("https://app.example.com") or a host
	// ("app.example.com", "app.example.com:8443").
	AllowedOrigins []string
	// LoopbackHostCheck rejects a request whose Host is not a loopback name
	// (DNS-rebinding protection); set it when the listener is on loopback.
	LoopbackHostCheck bool
	// AllowedHosts are Host names accepted beyond loopback ones by the
	// LoopbackHostCheck: the public name a reverse proxy on the same machine
	// forwards (server.public_url's host). A port, if given, is ignored.
	AllowedHosts []string

	// MaxBodyBytes bounds a POST body (default 8 MiB); more is a 413.
	MaxBodyBytes int64
	// BodyReadTimeout bounds the time to read one POST body (default 30s);
	// a slower client gets 408.
	BodyReadTimeout time.Duration
	// SessionIdleTimeout ends a session idle this long (default 30 min), and
	// stops a 2026-07-28 per-user worker without a request this long.
	SessionIdleTimeout time.Duration
	// WorkerStartTimeout bounds the time from starting a worker to its
	// answer to initialize (default 10s); a slower worker fails initialize
	// with HTTP 504.
	WorkerStartTimeout time.Duration
	// MaxSessions bounds live workers: sessions plus 2026-07-28 per-user
	// workers (default 1024); beyond it initialize, or a 2026-07-28 request
	// that needs a new worker, gets 503.
	MaxSessions int
	// MaxSessionsPerUser bounds one user's live sessions and per-user
	// workers (default 256); beyond it initialize ends the user's least
	// recently used idle session, and gets 429 when none is idle; a
	// 2026-07-28 request that needs a new worker gets 429. A user is a
	// principal here (auth.PrincipalKey: issuer and subject), as for
	// MaxUserBufferBytes.
	MaxSessionsPerUser int
	// SharedSessions says that the server's worker hosts many sessions
	// (workerproto.Identity.Sessions; the built-in worker does): every
	// 2025-11-25 session of one key (user, read-only flag and grant) then
	// runs in that key's one per-user worker, beside its 2026-07-28
	// requests, rather than in a process of its own. False keeps one
	// process per session.
	SharedSessions bool
	// MaxSessionsPerWorker bounds the sessions one shared worker hosts
	// (default 128); beyond it initialize gets 429.
	MaxSessionsPerWorker int
	// DB bounds the database connections the workers may hold, in all and
	// per principal (see DBBudget); the zero value is no budget.
	DB DBBudget
	// Accounting, when set, counts MaxSessions, MaxSessionsPerUser, DB
	// and MaxUserBufferBytes (and BufferedBytes) together with every other
	// gateway given the same one: several servers of one process then
	// share one set of limits. Nil: this gateway's own.
	Accounting *Accounting
	// MaxStreamLifetime bounds a standalone event stream: a session's GET
	// stream is closed, a 2026-07-28 subscriptions/listen ends with its
	// completion result (default 1h). Either ends sooner, when the token
	// it was opened with expires (auth.Principal.Expiry) or its
	// introspection answer is due again (auth.Principal.Recheck): the
	// client opens it again, with a fresh token. An open listen is not
	// activity: it does not keep a per-user worker from idle reaping.
	MaxStreamLifetime time.Duration
	// KeepAliveInterval is the time between SSE keep-alive comments
	// (default 25s), so proxies do not close an idle stream.
	KeepAliveInterval time.Duration
	// WriteTimeout bounds each write of a response to the client (default
	// 30s): a client that accepts no bytes for this long loses the response,
	// and its request no longer keeps its session busy. Answers are written
	// in pieces of at most 64 KiB, so a slow reader that keeps reading is
	// not cut off. The gateway sets the deadline at the start of each
	// request too; run it on an http.Server whose WriteTimeout is the same,
	// so that other handlers on a kept-alive connection start afresh. Over
	// HTTP/1.1 (what mcpgate serve speaks) a deadline that passes while an
	// answer is awaited does nothing until the next write; Go's HTTP/2
	// server would reset the stream then, so do not serve the gateway over
	// HTTP/2 with a WriteTimeout shorter than the longest tool call.
	WriteTimeout time.Duration
	// MaxStreamBufferBytes, MaxSessionBufferBytes and MaxUserBufferBytes
	// bound the bytes the gateway holds, not yet written, for one response,
	// for all of one session's responses and for all of one user's
	// (defaults 32 MiB, 64 MiB, 128 MiB). An answer that does not fit is
	// replaced by a JSON-RPC error of kind "bufferFull" naming the limit; a
	// notification or a worker's request that does not fit is dropped.
	MaxStreamBufferBytes  int64
	MaxSessionBufferBytes int64
	MaxUserBufferBytes    int64

	// Middleware wraps the transport after the Host and Origin checks and
	// before anything else: the place for authentication
	// (auth.Authenticator.Middleware), so that a forbidden Origin gets 403
	// rather than a challenge. Nil means none (the localhost mode).
	Middleware func(http.Handler) http.Handler

	// Observers hear every tools/call and refusal, and the workers' starts
	// and exits: the audit trail and the metrics. None means nothing is
	// recorded beyond the log.
	Observers []Observer

	// Trace, when set, is told of each client request forwarded to a
	// worker: it returns the message to send (with a trace context in
	// params._meta, say) and a func called with the worker's answer, or
	// with nil when the client cancelled (tracing.Tracing.Call). The id
	// must stay. Nil means no tracing.
	Trace func(ctx context.Context, m *jsonrpc.Message) (*jsonrpc.Message, func(*worker.Answer))

	// Ready checks what the gateway needs beyond itself before it should
	// be sent new clients (the issuer's keys loaded, the worker command
	// present, the database answering); Gateway.Ready and /readyz call it,
	// at most every 2s and with a 3s deadline. A non-nil error means not
	// ready; it is logged, never shown to the prober. Nil means nothing to
	// check.
	Ready func(ctx context.Context) error

	// DrainMin is the shortest drain: Drain keeps serving the sessions and
	// per-user workers it has for at least this long, even with nothing in
	// flight, so that a load balancer's health check has seen /readyz fail
	// before the gateway stops (HAProxy: inter × fall). Zero means none.
	DrainMin time.Duration

	// Logger receives the gateway's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now tells the time, for idle reaping; nil means time.Now.
	Now func() time.Time
}

// Defaults for the zero Options, and for the http.Server and listener a
// Gateway runs on (mcpgate serve); config takes its defaults from these.
const (
	DefaultMaxBodyBytes          = 8 << 20
	DefaultBodyReadTimeout       = 30 * time.Second
	DefaultSessionIdleTimeout    = 30 * time.Minute
	DefaultWorkerStartTimeout    = 10 * time.Second
	DefaultMaxSessions           = 1024
	DefaultMaxSessionsPerUser    = 256
	DefaultMaxSessionsPerWorker  = 128
	DefaultMaxStreamLifetime     = time.Hour
	DefaultKeepAliveInterval     = 25 * time.Second
	DefaultWriteTimeout          = 30 * time.Second
	DefaultMaxStreamBufferBytes  = 32 << 20
	DefaultMaxSessionBufferBytes = 64 << 20
	DefaultMaxUserBufferBytes    = 128 << 20
	// DefaultDrainMin is deploy/haproxy's health check: inter 2s × fall 3.
	// Options.DrainMin's zero value is no minimum; mcpgate serve uses this.
	DefaultDrainMin = 6 * time.Second
	// DefaultMaxDBConnections fits PostgreSQL's default max_connections
	// (100, 3 of them reserved) for one replica with room to spare; a
	// cluster of N replicas needs N × it ≤ max_connections − reserved
	// connections (docs/deploy.md). DBBudget's zero value is no budget.
	DefaultMaxDBConnections = 64
	// DefaultMaxDBConnectionsPerUser lets one principal hold both its
	// per-user workers (read-only and read-write: 2 × (max_transactions+1))
	// or ten sessions.
	DefaultMaxDBConnectionsPerUser = 10

	// The http.Server around the gateway: its head, keep-alive and drain.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultDrainTimeout      = 30 * time.Second

	// The listener (ListenerOptions, whose zero value limits nothing).
	DefaultMaxConnections = 4096
	// DefaultConnectionsShare: one principal may hold at most
	// MaxConnections divided by it.
	DefaultConnectionsShare             = 4
	DefaultMaxUnauthenticatedPerAddress = 64
	DefaultUnauthenticatedIdleTimeout   = 10 * time.Second
)

// Bounds of the sizes Validate accepts.
const (
	maxBodyBytesLimit   = 1 << 30
	maxBufferBytesLimit = 1 << 40
)

// Validate reports every option that New would refuse or that cannot work,
// each as an *options.Error naming its field. Zero values stand for the
// defaults and are valid.
func (o Options) Validate() error {
	var p options.Problems
	for _, d := range []struct {
		field string
		val   time.Duration
	}{
		{"BodyReadTimeout", o.BodyReadTimeout},
		{"SessionIdleTimeout", o.SessionIdleTimeout},
		{"WorkerStartTimeout", o.WorkerStartTimeout},
		{"WriteTimeout", o.WriteTimeout},
		{"DrainMin", o.DrainMin},
		{"MaxStreamLifetime", o.MaxStreamLifetime},
	} {
		if d.val < 0 {
			p.Add(d.field, "%v is negative; use a positive duration such as 30s (0 means the default)", d.val)
		}
	}
	for _, n := range []struct {
		field string
		val   int
	}{
		{"MaxSessions", o.MaxSessions},
		{"MaxSessionsPerUser", o.MaxSessionsPerUser},
		{"MaxSessionsPerWorker", o.MaxSessionsPerWorker},
		{"DB.Max", o.DB.Max},
		{"DB.MaxPerUser", o.DB.MaxPerUser},
	} {
		if n.val < 0 {
			p.Add(n.field, "%d is negative; use a positive number (0 means the default)", n.val)
		}
	}
	if o.MaxBodyBytes < 0 || o.MaxBodyBytes > maxBodyBytesLimit {
		p.Add("MaxBodyBytes", "%d is outside 1 byte to 1GiB; use a size such as 8MiB (0 means the default)", o.MaxBodyBytes)
	}
	bufs := []struct {
		field string
		val   int64
	}{
		{"MaxStreamBufferBytes", o.MaxStreamBufferBytes},
		{"MaxSessionBufferBytes", o.MaxSessionBufferBytes},
		{"MaxUserBufferBytes", o.MaxUserBufferBytes},
	}
	for i, b := range bufs {
		switch {
		case b.val < 0 || b.val > maxBufferBytesLimit:
			p.Add(b.field, "%d is outside 1 byte to 1TiB; use a size such as 64MiB (0 means the default)", b.val)
		case i > 0 && b.val > 0 && bufs[i-1].val > b.val:
			p.Add(bufs[i-1].field, "%d is more than %s %d; a smaller share cannot hold more than the larger one", bufs[i-1].val, b.field, b.val)
		}
	}
	if o.MaxStreamLifetime > 0 && o.MaxStreamLifetime < time.Second {
		p.Add("MaxStreamLifetime", "%v is below 1s; clients would reopen their streams without pause; use a duration such as 1h", o.MaxStreamLifetime)
	}
	if o.MaxSessionsPerUser > 0 && o.MaxSessions > 0 && o.MaxSessionsPerUser > o.MaxSessions {
		p.Add("MaxSessionsPerUser", "%d is more than MaxSessions %d; lower it or raise MaxSessions", o.MaxSessionsPerUser, o.MaxSessions)
	}
	if o.DB.MaxPerUser > 0 && o.DB.Max > 0 && o.DB.MaxPerUser > o.DB.Max {
		p.Add("DB.MaxPerUser", "%d is more than DB.Max %d; lower it or raise DB.Max", o.DB.MaxPerUser, o.DB.Max)
	}
	if o.SharedSessions && o.Credentials != nil {
		// Its sessions would run without the credential, or die with the
		// worker it is renewed with.
		p.Add("SharedSessions", "cannot be used with Credentials: a worker holding a credential is replaced before it expires, which would end every session it hosts; leave it false (a process per session)")
	}
	if err := CheckReplicaID(o.ReplicaID); err != nil {
		p.Add("ReplicaID", "%q is not a DNS label: use 1 to 63 of a-z 0-9 -, starting and ending with a letter or digit (a host or pod name such as mcpgate-0)", o.ReplicaID)
	}
	return p.Err("gateway")
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options { return o.withDefaults() }

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.LocalUser == "" {
		if u, err := user.Current(); err == nil {
			o.LocalUser = u.Username
		} else {
			o.LocalUser = "local"
		}
	}
	setDefault(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&o.BodyReadTimeout, DefaultBodyReadTimeout)
	setDefault(&o.SessionIdleTimeout, DefaultSessionIdleTimeout)
	setDefault(&o.WorkerStartTimeout, DefaultWorkerStartTimeout)
	setDefault(&o.MaxSessions, DefaultMaxSessions)
	setDefault(&o.MaxSessionsPerUser, DefaultMaxSessionsPerUser)
	setDefault(&o.MaxSessionsPerWorker, DefaultMaxSessionsPerWorker)
	o.DB = o.DB.withDefaults()
	setDefault(&o.MaxStreamLifetime, DefaultMaxStreamLifetime)
	setDefault(&o.KeepAliveInterval, DefaultKeepAliveInterval)
	setDefault(&o.WriteTimeout, DefaultWriteTimeout)
	setDefault(&o.MaxStreamBufferBytes, DefaultMaxStreamBufferBytes)
	setDefault(&o.MaxSessionBufferBytes, DefaultMaxSessionBufferBytes)
	setDefault(&o.MaxUserBufferBytes, DefaultMaxUserBufferBytes)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// setDefault sets *p to def when it is zero or negative.
func setDefault[T ~int | ~int64](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

// DefaultListenerOptions are the limits mcpgate serve puts on its listener
// unless configured; LimitListener's zero ListenerOptions limit nothing.
func DefaultListenerOptions() ListenerOptions {
	return ListenerOptions{
		MaxConnections:               DefaultMaxConnections,
		MaxConnectionsPerPrincipal:   DefaultMaxConnections / DefaultConnectionsShare,
		MaxUnauthenticatedPerAddress: DefaultMaxUnauthenticatedPerAddress,
		UnauthenticatedIdleTimeout:   DefaultUnauthenticatedIdleTimeout,
	}
}

// Validate reports every option that cannot work, each as an
// *options.Error naming its field.
func (lo ListenerOptions) Validate() error {
	var p options.Problems
	for _, n := range []struct {
		field string
		val   int
	}{
		{"MaxConnections", lo.MaxConnections},
		{"MaxConnectionsPerPrincipal", lo.MaxConnectionsPerPrincipal},
		{"MaxUnauthenticatedPerAddress", lo.MaxUnauthenticatedPerAddress},
	} {
		if n.val < 0 {
			p.Add(n.field, "%d is negative; use a positive number (0 means the default)", n.val)
		}
	}
	if lo.UnauthenticatedIdleTimeout < 0 {
		p.Add("UnauthenticatedIdleTimeout", "%v is negative; use a positive duration such as 30s (0 means the default)", lo.UnauthenticatedIdleTimeout)
	}
	if lo.MaxConnectionsPerPrincipal > 0 && lo.MaxConnections > 0 && lo.MaxConnectionsPerPrincipal >= lo.MaxConnections {
		p.Add("MaxConnectionsPerPrincipal", "%d is not below MaxConnections %d, so one user could hold every connection; lower it (the default is a quarter of MaxConnections)", lo.MaxConnectionsPerPrincipal, lo.MaxConnections)
	}
	return p.Err("gateway")
}
