// Package config is mcpgate's configuration: the documented structs that
// `mcpgate serve` runs from, their defaults, the loader (YAML file, then
// MCPGATE_ environment variables, then command-line flags) and the validation
// that reports every problem at once.
//
// It is the only package that imports viper (docs/design.md, Configuration). Other
// packages take plain option structs; cmd/mcpgate copies what they need out
// of a validated Config.
//
// Key material is referenced by path and read only when asked
// (HMACSecret); no error or log line produced here echoes a secret.
package config

import (
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/local"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/worker"
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
	Web      Web      `mapstructure:"web"`
	// Servers are the MCP servers served at /mcp/<name> (ServerEntry);
	// empty: the one server the worker and database sections describe,
	// at /mcp. Set in the file only.
	Servers []ServerEntry `mapstructure:"servers"`

	// entry is the servers entry a configuration of ServerConfigs was made
	// from; nil otherwise.
	entry *ServerEntry
}

// Server is the listener and the server's identity.
type Server struct {
	// Listen is the host:port to bind. The default is loopback only
	// (MCP 2025-11-25 §Transports: servers running locally SHOULD bind to
	// localhost). A non-loopback address needs TLS and auth, or Insecure.
	// It may also name a Unix socket, unix:PATH (unix: alone is the
	// per-user default path, local.DefaultPath), whose peers are
	// identified by the kernel rather than by a token; and it may list a
	// TCP address and a socket, in YAML as a list or in one string
	// separated by commas (ListenAddresses).
	Listen string `mapstructure:"listen"`
	// IdleExit is how long `mcpgate serve --daemon` runs with no client
	// connected to its socket and no worker before it exits. Default 5m.
	IdleExit time.Duration `mapstructure:"idle_exit"`
	// UnixAllowedUsers opens the Unix socket to other local accounts than
	// its owner's (a system socket, such as /run/mcpgate/mcpgate.sock):
	// each entry names an account or a group, and what its members get.
	// Empty (the default): only the account running the gateway.
	UnixAllowedUsers []UnixUser `mapstructure:"unix_allowed_users"`
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

// UnixUser is one entry of server.unix_allowed_users: who (an account, or
// every member of a group) may use the Unix socket, and with what rights:
// there is no token on a socket to carry scopes.
type UnixUser struct {
	// User names an account; Group a group. One of the two.
	User  string `mapstructure:"user"`
	Group string `mapstructure:"group"`
	// ReadOnly makes the entry's sessions read-only.
	ReadOnly bool `mapstructure:"read_only"`
	// Toolsets (built-in worker only) and Tools limit what the entry may
	// reach; both empty means every tool.
	Toolsets []string `mapstructure:"toolsets"`
	Tools    []string `mapstructure:"tools"`
}

// TLS is the server certificate. Both files or neither.
type TLS struct {
	// CertFile is the PEM certificate chain (leaf first).
	CertFile string `mapstructure:"cert_file"`
	// KeyFile is the PEM private key.
	KeyFile string `mapstructure:"key_file"`
	// ClientAuth asks TLS clients for a certificate: "off" (default),
	// "optional" (verified when given) or "required". A certificate-bound
	// token (RFC 8705 cnf.x5t#S256) is accepted only over a connection
	// with its certificate.
	ClientAuth string `mapstructure:"client_auth"`
	// ClientCAFile is a PEM file of the CA certificates client
	// certificates must chain to. Required with ClientAuth.
	ClientCAFile string `mapstructure:"client_ca_file"`
	// ClientCertProxies are the addresses (IPs or CIDR prefixes) of
	// proxies that terminate TLS and pass the client's certificate on in
	// a Client-Cert header (RFC 9440); from anyone else the header is
	// ignored. Empty (default): from nobody.
	ClientCertProxies []string `mapstructure:"client_cert_proxies"`
}

// TLS client authentication modes (TLS.ClientAuth).
const (
	ClientAuthOff      = "off"
	ClientAuthOptional = "optional"
	ClientAuthRequired = "required"
)

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

// Defaults, exported so that callers and docs share one source. A default
// of a value a package uses is that package's own Default* (the bindings in
// bind.go fill them in); config declares only those of its own keys.
const (
	DefaultListen   = "127.0.0.1:8000"
	DefaultIdleExit = local.DefaultIdleExit
	DefaultName     = worker.DefaultServerName

	DefaultMaxBodyBytes            = gateway.DefaultMaxBodyBytes
	DefaultMaxConnections          = gateway.DefaultMaxConnections
	DefaultConnectionsShare        = gateway.DefaultConnectionsShare
	DefaultMaxStreamLifetime       = gateway.DefaultMaxStreamLifetime
	DefaultReadHeaderTimeout       = gateway.DefaultReadHeaderTimeout
	DefaultReadTimeout             = gateway.DefaultBodyReadTimeout
	DefaultIdleTimeout             = gateway.DefaultIdleTimeout
	DefaultMaxSessions             = gateway.DefaultMaxSessions
	DefaultMaxSessionsPerUser      = gateway.DefaultMaxSessionsPerUser
	DefaultMaxSessionsPerWorker    = gateway.DefaultMaxSessionsPerWorker
	DefaultMaxDBConnections        = gateway.DefaultMaxDBConnections
	DefaultMaxDBConnectionsPerUser = gateway.DefaultMaxDBConnectionsPerUser
	DefaultSessionIdleTimeout      = gateway.DefaultSessionIdleTimeout
	DefaultWorkerStartTimeout      = gateway.DefaultWorkerStartTimeout
	DefaultWorkerStopGrace         = worker.DefaultStopGrace
	DefaultWriteTimeout            = gateway.DefaultWriteTimeout
	DefaultMaxStreamBuffer         = gateway.DefaultMaxStreamBufferBytes
	DefaultMaxSessionBuffer        = gateway.DefaultMaxSessionBufferBytes
	DefaultMaxUserBuffer           = gateway.DefaultMaxUserBufferBytes
	DefaultMaxUnauthPerAddr        = gateway.DefaultMaxUnauthenticatedPerAddress
	DefaultUnauthIdleTimeout       = gateway.DefaultUnauthenticatedIdleTimeout
	DefaultDrainTimeout            = gateway.DefaultDrainTimeout
	DefaultDrainMin                = gateway.DefaultDrainMin
	DefaultMaxWorkerMessage        = worker.DefaultMaxLineBytes
	DefaultDriver                  = db.SQLite
	DefaultDatabasePath            = db.DefaultSQLitePath
	DefaultStatementTimeout        = db.DefaultStatementTimeout
	DefaultLockTimeout             = db.DefaultLockTimeout
	DefaultMaxRows                 = db.DefaultMaxRows
	DefaultChecksTimeout           = db.DefaultChecksTimeout
	DefaultMaxTransactions         = db.DefaultMaxTransactions
	DefaultIdleRelease             = db.DefaultIdleRelease
	DefaultPoolSize                = worker.DefaultPoolSize
	MaxPoolSize                    = worker.MaxPoolSize
	DefaultUserClaim               = auth.DefaultUserClaim
	DefaultLeeway                  = auth.DefaultLeeway
	DefaultMaxTokenBytes           = auth.DefaultMaxTokenBytes
	DefaultTokenCacheSize          = auth.DefaultTokenCacheSize
	DefaultIntrospection           = IntrospectionOff
	DefaultIntrospectionTTL        = auth.DefaultIntrospectionMaxCacheTTL
	DefaultIntrospectionSlots      = auth.DefaultIntrospectionMaxConcurrent
	DefaultIntrospectionRate       = auth.DefaultIntrospectionPerAddressPerMinute
	DefaultDPoP                    = auth.DPoPAllowed
	DefaultDPoPProofLifetime       = auth.DefaultProofLifetime
	DefaultDPoPNonceLifetime       = auth.DefaultNonceLifetime
	DefaultDPoPReplayCache         = auth.DefaultReplayCacheSize
	DefaultLogLevel                = "info"
	DefaultLogFormat               = "text"
	DefaultMaxArgumentBytes        = audit.DefaultMaxArgumentBytes
	DefaultMetricsListen           = "127.0.0.1:9464"
)

// Default returns a Config holding every default: the unauthenticated
// localhost mode with the built-in worker on SQLite.
func Default() *Config {
	c := preset()
	c.applyDefaults()
	return c
}

// preset is the Config a load starts from: the defaults that zero cannot
// stand for, because zero is a value of their own (worker.pool_size 0 turns
// the pool off).
func preset() *Config {
	return &Config{Worker: Worker{PoolSize: DefaultPoolSize, RunAs: DefaultRunAs, Sandbox: WorkerSandbox{Enabled: true}}, Web: Web{Enabled: true}}
}

// applyDefaults fills every zero field that has a default: the packages'
// (applyBoundDefaults), then those derived from other keys. It is
// idempotent.
func (c *Config) applyDefaults() {
	c.applyBoundDefaults()
	l := &c.Limits
	setNumber(&l.MaxConnectionsPerPrincipal, l.MaxConnections/DefaultConnectionsShare)
	setNumber(&c.Database.TransactionIdleTimeout, l.SessionIdleTimeout)

	if len(c.Auth.Algorithms) == 0 {
		c.Auth.Algorithms = auth.DefaultAlgorithms()
		if c.Auth.HMACSecretFile != "" {
			c.Auth.Algorithms = append(c.Auth.Algorithms, auth.HMACAlgorithms()...)
		}
	}
	if len(c.Auth.AuthorizationServers) == 0 && c.Auth.Issuer != "" {
		c.Auth.AuthorizationServers = []string{c.Auth.Issuer}
	}
	setString(&c.Auth.Introspection, DefaultIntrospection)
	setString(&c.TLS.ClientAuth, ClientAuthOff)
	setString(&c.Log.Level, DefaultLogLevel)
	setString(&c.Log.Format, DefaultLogFormat)
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
