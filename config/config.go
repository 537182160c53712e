// Package config is mcpgate's configuration: the documented structs that
// `mcpgate serve` runs from, their defaults, the loader (YAML file, then
// MCPGATE_ environment variables, then command-line flags) and the validation
// that reports every problem at once.
//
// It is the only package that imports viper (DESIGN.md, decision 9). Other
// packages take plain option structs; cmd/mcpgate copies what they need out
// of a validated Config.
//
// Key material is referenced by path and read only when asked
// (HMACSecret); no error or log line produced here echoes a secret.
package config

import (
	"time"

	"github.com/mcpgate/mcpgate/auth"
)

// Config is the whole configuration of `mcpgate serve`. The YAML names of the
// sections and keys are the snake_case mapstructure tags below; the
// environment name of a key is MCPGATE_ followed by its dotted path in upper
// case with dots as underscores (auth.issuer is MCPGATE_AUTH_ISSUER).
//
// A zero value in a limit, timeout or size means "the default"; Load fills the
// defaults in, so a loaded Config holds the numbers actually used.
type Config struct {
	Server   Server   `mapstructure:"server"`
	Limits   Limits   `mapstructure:"limits"`
	Worker   Worker   `mapstructure:"worker"`
	Database Database `mapstructure:"database"`
	Auth     Auth     `mapstructure:"auth"`
	TLS      TLS      `mapstructure:"tls"`
	Log      Log      `mapstructure:"log"`
	Audit    Audit    `mapstructure:"audit"`
	Metrics  Metrics  `mapstructure:"metrics"`
	Tracing  Tracing  `mapstructure:"tracing"`
}

// Server is the listener and the server's identity.
type Server struct {
	// Listen is the host:port to bind. The default is loopback only
	// (MCP 2025-11-25 §Transports: servers running locally SHOULD bind to
	// localhost). A non-loopback address needs TLS and auth, or Insecure.
	Listen string `mapstructure:"listen"`
	// PublicURL is the origin clients reach the gateway at, such as
	// https://mcp.example.com (a path prefix is allowed, /mcp is not). The
	// canonical resource URI (RFC 8707, RFC 9728) is PublicURL + "/mcp".
	// Required when Auth.Issuer is set.
	PublicURL string `mapstructure:"public_url"`
	// AllowedOrigins are extra hosts a browser Origin header may name,
	// besides the loopback hosts that are always allowed. Each entry is a
	// host (app.example.com, app.example.com:8443) or an origin
	// (https://app.example.com, which also pins the scheme); Validate
	// checks the form, the gateway compares.
	AllowedOrigins []string `mapstructure:"allowed_origins"`
	// ReadOnly makes every session read-only, whatever its token says.
	ReadOnly bool `mapstructure:"read_only"`
	// Insecure allows a non-loopback Listen without TLS and auth. It exists
	// for containers behind a trusted proxy and for tests; the gateway logs
	// it loudly at start.
	Insecure bool `mapstructure:"insecure"`
	// Title is serverInfo.title: which instance this is, for a human. Left
	// out of serverInfo when empty. Also the RFC 9728 resource_name.
	Title string `mapstructure:"title"`
	// Name is serverInfo.name: which software this is. Default "mcpgate".
	Name string `mapstructure:"name"`
	// LocalUser is the user every session runs as in the unauthenticated
	// localhost mode (Auth.Issuer empty). Empty means the OS user running
	// the gateway (the gateway resolves it), as the GemStone router logged
	// its workers in as the server's own user.
	LocalUser string `mapstructure:"local_user"`
	// ReplicaID names this gateway among identical replicas behind one
	// load balancer: it starts every legacy session id and transaction
	// handle the replica mints, so the load balancer routes on it
	// (docs/deploy.md). A DNS label; empty (the default) means a single
	// gateway.
	ReplicaID string `mapstructure:"replica_id"`
}

// Limits bound everything a peer controls (DESIGN.md, decision 10).
type Limits struct {
	// MaxBodyBytes caps a request body; a larger one is answered 413
	// without being read. Default 8 MiB. YAML and environment accept a
	// plain number of bytes or a size such as 8MiB or 512KiB.
	MaxBodyBytes ByteSize `mapstructure:"max_body_bytes"`
	// MaxConnections caps live connections; the next one gets 503.
	// Default 4096; each open SSE stream holds one.
	MaxConnections int `mapstructure:"max_connections"`
	// ReadHeaderTimeout bounds reading a request's head. Default 10s.
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	// ReadTimeout bounds reading a POST body, from when the gateway starts
	// reading it: an aggregate, so a peer dribbling bytes cannot hold a
	// request (408). The head is bounded by ReadHeaderTimeout. Default 30s.
	ReadTimeout time.Duration `mapstructure:"read_timeout"`
	// IdleTimeout bounds a kept-alive connection between requests.
	// Default 2m.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxSessions caps live worker processes: MCP sessions plus the
	// per-user workers of MCP 2026-07-28 clients; the next initialize, or a
	// 2026-07-28 request that needs a new worker, gets 503. Default 1024.
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxSessionsPerUser caps one user's live sessions and per-user
	// workers; the next initialize, or a 2026-07-28 request that needs a new
	// worker, gets 429. Default 256.
	MaxSessionsPerUser int `mapstructure:"max_sessions_per_user"`
	// SessionIdleTimeout is how long a session, or a per-user worker, may
	// go without a request before it is reaped and its worker stopped.
	// Default 30m.
	SessionIdleTimeout time.Duration `mapstructure:"session_idle_timeout"`
	// WorkerStartTimeout bounds a worker's start, up to its answer to
	// initialize. Default 10s.
	WorkerStartTimeout time.Duration `mapstructure:"worker_start_timeout"`
	// WorkerStopGrace is how long a stopping worker has between SIGTERM
	// and SIGKILL. Default 5s.
	WorkerStopGrace time.Duration `mapstructure:"worker_stop_grace"`
	// WriteTimeout bounds each write of a response (at most 64 KiB): a
	// client that accepts no bytes for this long loses the response, and
	// its request stops keeping the session busy. Default 30s.
	WriteTimeout time.Duration `mapstructure:"write_timeout"`
	// MaxStreamBufferBytes, MaxSessionBufferBytes and MaxUserBufferBytes
	// cap the bytes held, not yet written, for one response, one session's
	// responses and one user's. An answer beyond them is replaced by an
	// error of kind bufferFull. Defaults 32 MiB, 64 MiB, 128 MiB.
	MaxStreamBufferBytes  ByteSize `mapstructure:"max_stream_buffer_bytes"`
	MaxSessionBufferBytes ByteSize `mapstructure:"max_session_buffer_bytes"`
	MaxUserBufferBytes    ByteSize `mapstructure:"max_user_buffer_bytes"`
	// MaxUnauthenticatedPerAddress caps the connections from one client
	// address (IPv4, or IPv6 /64) that have not yet carried a request past
	// the token check; the next one is refused like one over
	// max_connections. Default 64.
	MaxUnauthenticatedPerAddress int `mapstructure:"max_unauthenticated_per_address"`
	// UnauthenticatedIdleTimeout bounds a connection's waits (TLS
	// handshake, request head, keep-alive idle) until a request on it has
	// passed the token check. Default 10s.
	UnauthenticatedIdleTimeout time.Duration `mapstructure:"unauthenticated_idle_timeout"`
	// DrainTimeout bounds the drain on SIGTERM: /readyz fails and new
	// sessions and per-user workers get 503 at once, and the calls in
	// flight have this long to finish before the workers are stopped. A
	// second SIGTERM cuts it short. Default 30s; keep the service
	// manager's stop timeout above it plus worker_stop_grace.
	DrainTimeout time.Duration `mapstructure:"drain_timeout"`
	// MaxWorkerMessageBytes caps one JSON-RPC message a worker writes. An
	// answer over it fails its own request (-32603, error.data.kind
	// "messageTooLarge") and the session goes on; any other message over
	// it is dropped and logged. Default 64 MiB, well above what the
	// built-in worker writes (16 MiB of structured content at most).
	MaxWorkerMessageBytes ByteSize `mapstructure:"max_worker_message_bytes"`
}

// Worker says which process serves a session.
type Worker struct {
	// Command is the worker's argv. Empty means the built-in worker
	// (`mcpgate worker`, the running executable). Any stdio MCP server may
	// be named instead. In the environment and on the command line it is
	// one string split like a shell would (quotes group, no expansion).
	Command []string `mapstructure:"command"`
	// Env holds NAME=value pairs added to the worker's environment. The
	// YAML may give a list of NAME=value strings or a mapping; names keep
	// their case. Names starting MCPGATE_WORKER_ are reserved for the
	// identity the gateway hands the worker (worker.Environ) and refused.
	Env []string `mapstructure:"env"`
	// Dir is the worker's working directory; empty means the gateway's.
	Dir string `mapstructure:"dir"`
	// Toolsets names the built-in toolsets a session gets; empty means
	// every built-in one.
	Toolsets []string `mapstructure:"toolsets"`
	// SafeTools names the tools of an external worker (Command set) that
	// are safe in a read-only session. Empty means none: fail-closed
	// (DESIGN.md, decision 4). The built-in toolsets vouch for their own.
	SafeTools []string `mapstructure:"safe_tools"`
	// SafeMethods names methods of an external worker, beyond MCP's read
	// methods (gateway.ReadMethods), that a read-only request may send.
	// Empty means none: fail-closed, as for tools.
	SafeMethods []string `mapstructure:"safe_methods"`
	// Limits bound each worker process (worker.limits.*).
	Limits WorkerLimits `mapstructure:"limits"`
}

// WorkerLimits bound each worker process, so that one runaway worker cannot
// take the machine. Zero means not set. The rlimits (address_space,
// cpu_time, open_files) hold everywhere; memory, cpu and processes need a
// delegated cgroup v2 (the shipped systemd unit's Delegate=) and are
// skipped, with a warning at start, without one.
type WorkerLimits struct {
	// AddressSpace is RLIMIT_AS: the most virtual memory a worker may map.
	// An allocation beyond it fails and the worker usually exits. Go
	// programs map more than they use: keep it at 1GiB or more.
	AddressSpace ByteSize `mapstructure:"address_space"`
	// CPUTime is RLIMIT_CPU: the CPU time a worker may use over its life;
	// then SIGXCPU, and SIGKILL a second later.
	CPUTime time.Duration `mapstructure:"cpu_time"`
	// OpenFiles is RLIMIT_NOFILE: the most files and sockets a worker may
	// hold open.
	OpenFiles int `mapstructure:"open_files"`
	// Memory is the worker's cgroup memory.max (memory.swap.max is 0):
	// resident memory and page cache; beyond it the kernel kills the
	// worker.
	Memory ByteSize `mapstructure:"memory"`
	// CPU is the worker's cgroup cpu.max in cores (0.5 is half a core):
	// a throttle, not a kill.
	CPU float64 `mapstructure:"cpu"`
	// Processes is the worker's cgroup pids.max: its processes and threads
	// together; beyond it fork and thread creation fail.
	Processes int `mapstructure:"processes"`
}

// Database is the built-in worker's database.
type Database struct {
	// Driver is "sqlite" (default) or "postgres".
	Driver string `mapstructure:"driver"`
	// Path is the SQLite file. Default data/mcpgate.db.
	Path string `mapstructure:"path"`
	// DSN is the PostgreSQL connection string (postgres:// URL or
	// key=value). Prefer a DSN without a password plus PGPASSFILE, or set
	// it through MCPGATE_DATABASE_DSN rather than in a file.
	DSN string `mapstructure:"dsn"`
	// SetRole makes each worker run `SET ROLE` to its session's user id on
	// PostgreSQL, so grants and row-level security apply per user. Not a
	// security boundary against a user who can run SQL: the shared login
	// role is a member of every user's role. ConnectAsUser is one.
	SetRole bool `mapstructure:"set_role"`
	// ConnectAsUser makes each worker log in to PostgreSQL as its session's
	// user id (the DSN's user and password are not used; authentication
	// comes from client certificates, pg_hba peer/trust or PGPASSFILE), so
	// the database enforces per-user rights against any SQL.
	ConnectAsUser bool `mapstructure:"connect_as_user"`
	// StatementTimeout bounds one SQL statement. Default 30s.
	StatementTimeout time.Duration `mapstructure:"statement_timeout"`
	// LockTimeout bounds the wait for another session's lock (SQLite's
	// busy timeout, PostgreSQL's lock_timeout); a longer wait fails the
	// statement with kind conflict. Default 5s.
	LockTimeout time.Duration `mapstructure:"lock_timeout"`
	// MaxRows caps the rows of one tool result (the true total is still
	// reported). Default 500.
	MaxRows int `mapstructure:"max_rows"`
	// ChecksTimeout bounds one run of every check (run_checks,
	// list_failing_checks); checks not reached by then are reported as not
	// run. Default 2m.
	ChecksTimeout time.Duration `mapstructure:"checks_timeout"`
	// MaxTransactions bounds the transaction handles (begin) that one
	// per-user worker, serving MCP 2026-07-28, holds open at once; each
	// holds a database connection. Default 16.
	MaxTransactions int `mapstructure:"max_transactions"`
	// TransactionIdleTimeout rolls a handle's transaction back after this
	// long without a call on it. Default: limits.session_idle_timeout.
	TransactionIdleTimeout time.Duration `mapstructure:"transaction_idle_timeout"`
}

// Auth configures bearer-token authentication (OAuth 2.1 resource server).
// An empty Issuer is the unauthenticated localhost mode.
type Auth struct {
	// Issuer is the authorization server's issuer URL, exactly as in its
	// tokens' iss claim (Keycloak: https://HOST/realms/NAME). https, or
	// http on a loopback host for local tests only.
	Issuer string `mapstructure:"issuer"`
	// AuthorizationServers are published in the RFC 9728 metadata.
	// Default: [Issuer].
	AuthorizationServers []string `mapstructure:"authorization_servers"`
	// RequiredScopes must all be on every token, else 403
	// insufficient_scope.
	RequiredScopes []string `mapstructure:"required_scopes"`
	// WriteScope makes a session read-write; a token without it gets a
	// read-only session. Empty means every authenticated session is
	// read-write (unless Server.ReadOnly).
	WriteScope string `mapstructure:"write_scope"`
	// ExtraScopes are advertised (scopes_supported, challenges) but not
	// checked: scopes a client must ask for for the issuer's sake, such
	// as Keycloak's profile and offline_access (see docs/keycloak.md).
	ExtraScopes []string `mapstructure:"extra_scopes"`
	// Policies decide which tools a token may reach (see Policy): a tool is
	// reachable when some rule applies to the token and grants it, and
	// everything else is denied. Not with WriteScope, which is the simple
	// form of two rules (docs/configuration.md).
	Policies []Policy `mapstructure:"policies"`
	// InitialScopes, when set, is the scope of the 401 challenge instead of
	// every advertised scope (least privilege: a client asks for the basic
	// tier first, and a call that needs more gets a 403 naming it).
	InitialScopes []string `mapstructure:"initial_scopes"`
	// UserClaim names the claim that holds the user id. Default "sub";
	// "preferred_username" is usual on Keycloak.
	UserClaim string `mapstructure:"user_claim"`
	// Algorithms is the allow-list of JWS algorithms. Default: every
	// asymmetric one (RS*, PS*, ES*, EdDSA), plus HS256/384/512 when
	// HMACSecretFile is set. HS* may be listed only with HMACSecretFile;
	// "none" never.
	Algorithms []string `mapstructure:"algorithms"`
	// HMACSecretFile is the path of a shared secret for HS* tokens (at
	// least 32 bytes; one trailing newline is ignored). Never the secret.
	HMACSecretFile string `mapstructure:"hmac_secret_file"`
	// RequireATJWT requires the header typ "at+jwt" (RFC 9068) instead of
	// accepting "JWT" too.
	RequireATJWT bool `mapstructure:"require_at_jwt"`
	// Leeway is the clock skew allowed on nbf and iat (exp gets none: an
	// expired token is expired). Default 60s; at most 5m.
	Leeway time.Duration `mapstructure:"leeway"`
	// MaxTokenBytes caps a bearer token's size. Default 16 KiB.
	MaxTokenBytes ByteSize `mapstructure:"max_token_bytes"`
	// IssuerCAFile is a PEM file of extra CA certificates to trust, beside
	// the system roots, when fetching the issuer's discovery document and
	// keys: for an issuer behind a private CA (or the test issuer).
	IssuerCAFile string `mapstructure:"issuer_ca_file"`
	// TokenCacheSize bounds the cache of verified tokens (and of
	// introspection answers): each kept until its exp at most, emptied
	// when the issuer's keys change. Default 10000; -1 turns it off.
	TokenCacheSize int `mapstructure:"token_cache_size"`
	// Introspection checks tokens with the issuer's RFC 7662 endpoint
	// (discovery's introspection_endpoint): "off" (default), "opaque"
	// (tokens that are not JWTs; JWTs stay verified locally) or "all"
	// (every token, for Keycloak lightweight access tokens).
	Introspection string `mapstructure:"introspection"`
	// IntrospectionClientID is the client this gateway authenticates as
	// at the introspection endpoint. Required with Introspection.
	IntrospectionClientID string `mapstructure:"introspection_client_id"`
	// IntrospectionClientSecretFile is the path of that client's secret
	// (one trailing newline ignored). Never the secret.
	IntrospectionClientSecretFile string `mapstructure:"introspection_client_secret_file"`
	// IntrospectionMaxCacheTTL bounds how long an introspection answer is
	// reused (never past the token's exp): the longest a revoked token
	// keeps working. Default 1m; at most 1h.
	IntrospectionMaxCacheTTL time.Duration `mapstructure:"introspection_max_cache_ttl"`
	// IntrospectionMaxConcurrent bounds the introspection requests in
	// flight; one that waits longer than 5s for a slot is answered 503.
	// Default 32; at most 1024.
	IntrospectionMaxConcurrent int `mapstructure:"introspection_max_concurrent"`
}

// Policy is one rule of auth.policies: who (a scope, or a claim holding one
// of some values) may reach what (toolsets and tools).
type Policy struct {
	// Scope: the rule applies to a token holding this scope.
	Scope string `mapstructure:"scope"`
	// Claim and Values: the rule applies to a token whose claim holds one
	// of the values: realm_access.roles, resource_access.<client>.roles,
	// groups, or another top-level claim of strings.
	Claim  string   `mapstructure:"claim"`
	Values []string `mapstructure:"values"`
	// Toolsets (built-in worker only) and Tools name what the rule grants.
	Toolsets []string `mapstructure:"toolsets"`
	Tools    []string `mapstructure:"tools"`
}

// Introspection modes (Auth.Introspection).
const (
	IntrospectionOff    = "off"
	IntrospectionOpaque = "opaque"
	IntrospectionAll    = "all"
)

// TLS is the server certificate. Both files or neither.
type TLS struct {
	// CertFile is the PEM certificate chain (leaf first).
	CertFile string `mapstructure:"cert_file"`
	// KeyFile is the PEM private key.
	KeyFile string `mapstructure:"key_file"`
}

// Log configures the gateway's log.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `mapstructure:"level"`
	// Format is text (default) or json.
	Format string `mapstructure:"format"`
}

// Audit configures the audit trail: one event per tools/call and per
// refusal (docs/operations.md).
type Audit struct {
	// Path is a JSON-lines file the events are appended to, reopened on
	// SIGHUP (log rotation). Empty: the events go to the main log.
	Path string `mapstructure:"path"`
	// Log sends the events to the main log as well when Path is set.
	Log bool `mapstructure:"log"`
	// Arguments includes each call's tool arguments in its event.
	Arguments bool `mapstructure:"arguments"`
	// MaxArgumentBytes cuts each argument value longer than this (as JSON
	// text). Default 256 bytes.
	MaxArgumentBytes ByteSize `mapstructure:"max_argument_bytes"`
	// RedactArguments names arguments whose values are recorded as
	// "[redacted]". Default none.
	RedactArguments []string `mapstructure:"redact_arguments"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Listen is the host:port of the listener that serves /metrics, apart
	// from the public one. Default 127.0.0.1:9464; "off" disables it.
	Listen string `mapstructure:"listen"`
}

// Tracing configures OpenTelemetry tracing.
type Tracing struct {
	// OTLPEndpoint is the OTLP/HTTP collector URL spans are sent to, such
	// as http://127.0.0.1:4318. Empty disables tracing.
	OTLPEndpoint string `mapstructure:"otlp_endpoint"`
}

// MetricsOff is the Metrics.Listen value that disables the listener (an
// empty value means the default, as for every key).
const MetricsOff = "off"

// Defaults, exported so that callers and docs share one source.
const (
	DefaultListen             = "127.0.0.1:8000"
	DefaultName               = "mcpgate"
	DefaultMaxBodyBytes       = 8 << 20
	DefaultMaxConnections     = 4096
	DefaultReadHeaderTimeout  = 10 * time.Second
	DefaultReadTimeout        = 30 * time.Second
	DefaultIdleTimeout        = 2 * time.Minute
	DefaultMaxSessions        = 1024
	DefaultMaxSessionsPerUser = 256
	DefaultSessionIdleTimeout = 30 * time.Minute
	DefaultWorkerStartTimeout = 10 * time.Second
	DefaultWorkerStopGrace    = 5 * time.Second
	DefaultWriteTimeout       = 30 * time.Second
	DefaultMaxStreamBuffer    = 32 << 20
	DefaultMaxSessionBuffer   = 64 << 20
	DefaultMaxUserBuffer      = 128 << 20
	DefaultMaxUnauthPerAddr   = 64
	DefaultUnauthIdleTimeout  = 10 * time.Second
	DefaultDrainTimeout       = 30 * time.Second
	DefaultMaxWorkerMessage   = 64 << 20
	DefaultDriver             = "sqlite"
	DefaultDatabasePath       = "data/mcpgate.db"
	DefaultStatementTimeout   = 30 * time.Second
	DefaultLockTimeout        = 5 * time.Second
	DefaultMaxRows            = 500
	DefaultChecksTimeout      = 2 * time.Minute
	DefaultMaxTransactions    = 16
	DefaultUserClaim          = "sub"
	DefaultLeeway             = 60 * time.Second
	DefaultMaxTokenBytes      = 16 << 10
	DefaultTokenCacheSize     = auth.DefaultTokenCacheSize
	DefaultIntrospection      = IntrospectionOff
	DefaultIntrospectionTTL   = auth.DefaultIntrospectionMaxCacheTTL
	DefaultIntrospectionSlots = auth.DefaultIntrospectionMaxConcurrent
	DefaultLogLevel           = "info"
	DefaultLogFormat          = "text"
	DefaultMaxArgumentBytes   = 256
	DefaultMetricsListen      = "127.0.0.1:9464"
)

// Default returns a Config holding every default: the unauthenticated
// localhost mode with the built-in worker on SQLite.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

// applyDefaults fills every zero field that has a default. It is idempotent.
func (c *Config) applyDefaults() {
	setString(&c.Server.Listen, DefaultListen)
	setString(&c.Server.Name, DefaultName)

	l := &c.Limits
	setNumber(&l.MaxBodyBytes, DefaultMaxBodyBytes)
	setNumber(&l.MaxConnections, DefaultMaxConnections)
	setNumber(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setNumber(&l.ReadTimeout, DefaultReadTimeout)
	setNumber(&l.IdleTimeout, DefaultIdleTimeout)
	setNumber(&l.MaxSessions, DefaultMaxSessions)
	setNumber(&l.MaxSessionsPerUser, DefaultMaxSessionsPerUser)
	setNumber(&l.SessionIdleTimeout, DefaultSessionIdleTimeout)
	setNumber(&l.WorkerStartTimeout, DefaultWorkerStartTimeout)
	setNumber(&l.WorkerStopGrace, DefaultWorkerStopGrace)
	setNumber(&l.WriteTimeout, DefaultWriteTimeout)
	setNumber(&l.MaxStreamBufferBytes, DefaultMaxStreamBuffer)
	setNumber(&l.MaxSessionBufferBytes, DefaultMaxSessionBuffer)
	setNumber(&l.MaxUserBufferBytes, DefaultMaxUserBuffer)
	setNumber(&l.MaxUnauthenticatedPerAddress, DefaultMaxUnauthPerAddr)
	setNumber(&l.UnauthenticatedIdleTimeout, DefaultUnauthIdleTimeout)
	setNumber(&l.DrainTimeout, DefaultDrainTimeout)
	setNumber(&l.MaxWorkerMessageBytes, DefaultMaxWorkerMessage)

	setString(&c.Database.Driver, DefaultDriver)
	setString(&c.Database.Path, DefaultDatabasePath)
	setNumber(&c.Database.StatementTimeout, DefaultStatementTimeout)
	setNumber(&c.Database.LockTimeout, DefaultLockTimeout)
	setNumber(&c.Database.MaxRows, DefaultMaxRows)
	setNumber(&c.Database.ChecksTimeout, DefaultChecksTimeout)
	setNumber(&c.Database.MaxTransactions, DefaultMaxTransactions)
	setNumber(&c.Database.TransactionIdleTimeout, l.SessionIdleTimeout)

	setString(&c.Auth.UserClaim, DefaultUserClaim)
	if len(c.Auth.Algorithms) == 0 {
		c.Auth.Algorithms = auth.DefaultAlgorithms()
		if c.Auth.HMACSecretFile != "" {
			c.Auth.Algorithms = append(c.Auth.Algorithms, auth.HMACAlgorithms()...)
		}
	}
	if len(c.Auth.AuthorizationServers) == 0 && c.Auth.Issuer != "" {
		c.Auth.AuthorizationServers = []string{c.Auth.Issuer}
	}
	setNumber(&c.Auth.Leeway, DefaultLeeway)
	setNumber(&c.Auth.MaxTokenBytes, DefaultMaxTokenBytes)
	setNumber(&c.Auth.TokenCacheSize, DefaultTokenCacheSize)
	setString(&c.Auth.Introspection, DefaultIntrospection)
	setNumber(&c.Auth.IntrospectionMaxCacheTTL, DefaultIntrospectionTTL)
	setNumber(&c.Auth.IntrospectionMaxConcurrent, DefaultIntrospectionSlots)

	setString(&c.Log.Level, DefaultLogLevel)
	setString(&c.Log.Format, DefaultLogFormat)

	setNumber(&c.Audit.MaxArgumentBytes, DefaultMaxArgumentBytes)
	setString(&c.Metrics.Listen, DefaultMetricsListen)
}

func setString(p *string, def string) {
	if *p == "" {
		*p = def
	}
}

func setNumber[T ~int | ~int64](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}
