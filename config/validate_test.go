package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/certs"
)

// fixture holds files a valid network configuration points at.
type fixture struct {
	dir, cert, key, secret, exe, plain string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{
		dir:    dir,
		cert:   filepath.Join(dir, "cert.pem"),
		key:    filepath.Join(dir, "key.pem"),
		secret: filepath.Join(dir, "hmac.secret"),
		exe:    filepath.Join(dir, "server"),
		plain:  filepath.Join(dir, "plain.txt"),
	}
	for _, w := range []struct {
		path, content string
		mode          os.FileMode
	}{
		{f.cert, "cert", 0o644},
		{f.key, "key", 0o600},
		{f.secret, strings.Repeat("s", 48) + "\n", 0o600},
		{f.exe, "#!/bin/sh\n", 0o755},
		{f.plain, "text", 0o644},
	} {
		require.NoError(t, os.WriteFile(w.path, []byte(w.content), w.mode))
	}
	return f
}

// network returns a valid configuration of a gateway on the network:
// TLS, Keycloak-shaped auth.
func (f fixture) network() *Config {
	c := Default()
	c.Server.Listen = "0.0.0.0:8443"
	c.Server.PublicURL = "https://mcp.example.com"
	c.Auth.Issuer = "https://keycloak.example.com/realms/mcp"
	c.Auth.RequiredScopes = []string{"mcp:use"}
	c.Auth.WriteScope = "mcp:write"
	c.Auth.ExtraScopes = []string{"profile", "offline_access"}
	c.Auth.UserClaim = "preferred_username"
	c.TLS = TLS{CertFile: f.cert, KeyFile: f.key}
	return c
}

func TestValidateAcceptsGoodConfigs(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		mutate func(c *Config)
	}{
		{"zero Config means the defaults", func(c *Config) { *c = Config{} }},
		{"metrics off", func(c *Config) { c.Metrics.Listen = MetricsOff }},
		{"tracing to a collector", func(c *Config) { c.Tracing.OTLPEndpoint = "http://127.0.0.1:4318" }},
		{"audit to a file with arguments", func(c *Config) {
			c.Audit = Audit{Path: filepath.Join(t.TempDir(), "audit.jsonl"), Log: true, Arguments: true, MaxArgumentBytes: 1024, RedactArguments: []string{"password"}}
		}},
		{"network with TLS and auth", func(*Config) {}},
		{"auth behind a proxy on loopback without TLS", func(c *Config) {
			c.Server.Listen = "127.0.0.1:8000"
			c.TLS = TLS{}
		}},
		{"insecure non-loopback", func(c *Config) {
			c.Server.Listen = ":8000"
			c.Server.Insecure = true
			c.TLS = TLS{}
			c.Auth = Auth{}
			c.Server.PublicURL = ""
		}},
		{"upper-case localhost", func(c *Config) {
			c.Auth.Issuer = "http://LOCALHOST:9999/realms/test"
			c.Server.Listen = "LocalHost:8000"
		}},
		{"http public url off loopback without auth", func(c *Config) {
			c.Server.Listen = "127.0.0.1:8000"
			c.Auth = Auth{}
			c.Server.PublicURL = "http://mcp.internal:8000"
		}},
		{"loopback http issuer and public url for tests", func(c *Config) {
			c.Auth.Issuer = "http://127.0.0.1:9999/realms/test"
			c.Server.PublicURL = "http://localhost:8000"
			c.Server.Listen = "[::1]:8000"
		}},
		{"public url with a path prefix", func(c *Config) { c.Server.PublicURL = "https://example.com/tools/" }},
		{"hmac with a secret file", func(c *Config) {
			c.Auth.Algorithms = []string{"HS256"}
			c.Auth.HMACSecretFile = f.secret
		}},
		{"hmac secret with the default algorithms", func(c *Config) {
			c.Auth.Algorithms = nil
			c.Auth.HMACSecretFile = f.secret
		}},
		{"local user unset in localhost mode", func(c *Config) {
			*c = *Default()
			c.Server.LocalUser = ""
		}},
		{"external worker with env and safe tools", func(c *Config) {
			c.Worker.Command = []string{f.exe, "--stdio"}
			c.Worker.Env = []string{"HOME=/tmp", "lower_case=1", "EMPTY="}
			c.Worker.Dir = f.dir
			c.Worker.SafeTools = []string{"read"}
			c.Worker.SafeMethods = []string{"x/stats"}
		}},
		{"worker found in PATH", func(c *Config) { c.Worker.Command = []string{"sh", "-c", "true"} }},
		{"postgres url", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "postgresql://u@h/db?sslmode=disable", SetRole: true, UserRoleMemberOf: "mcp_users"}
		}},
		{"postgres key=value", func(c *Config) { c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp"} }},
		{"postgres connect as user", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", ConnectAsUser: true, UserRoleMemberOf: "mcp_users"}
		}},
		{"allowed origins", func(c *Config) {
			c.Server.AllowedOrigins = []string{"https://app.example.com", "app2.example.com:8443", "http://[::1]:3000/"}
		}},
		{"upper-case log level", func(c *Config) { c.Log.Level = "DEBUG" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.network()
			tt.mutate(c)
			assert.NoError(t, c.Validate())
		})
	}
}

func TestValidateProblems(t *testing.T) {
	f := newFixture(t)
	localhost := func(c *Config) { *c = *Default() }
	tests := []struct {
		name   string
		mutate func(c *Config)
		key    string
		want   string
	}{
		{"listen not host:port", func(c *Config) { c.Server.Listen = "8000" }, "server.listen", `"8000" is not host:port`},
		{"listen port out of range", func(c *Config) { c.Server.Listen = "127.0.0.1:70000" }, "server.listen", `port "70000" is not a number from 0 to 65535`},
		{"non-loopback without TLS or auth", func(c *Config) {
			localhost(c)
			c.Server.Listen = "0.0.0.0:8000"
		}, "server.listen", "set tls.cert_file and tls.key_file and auth.issuer, bind to 127.0.0.1 behind a proxy, or set server.insecure: true"},
		{"non-loopback without TLS", func(c *Config) { c.TLS = TLS{} }, "server.listen", "set tls.cert_file and tls.key_file, bind"},
		{"empty host listens everywhere", func(c *Config) {
			localhost(c)
			c.Server.Listen = ":8000"
		}, "server.listen", `":8000" is not a loopback address`},
		{"public url missing with auth", func(c *Config) { c.Server.PublicURL = "" }, "server.public_url", "is required with auth.issuer"},
		{"public url relative", func(c *Config) { c.Server.PublicURL = "mcp.example.com" }, "server.public_url", "is not an absolute http(s) URL"},
		{"public url http with auth", func(c *Config) { c.Server.PublicURL = "http://mcp.example.com" }, "server.public_url", "must use https"},
		{"public url with query", func(c *Config) { c.Server.PublicURL = "https://mcp.example.com/?x=1" }, "server.public_url", "must not carry user info, a query or a fragment"},
		{"public url with fragment", func(c *Config) { c.Server.PublicURL = "https://mcp.example.com#f" }, "server.public_url", "must not carry"},
		{"public url with user info hides the password", func(c *Config) { c.Server.PublicURL = "https://u:hunter2@mcp.example.com" }, "server.public_url", "must not carry"},
		{"public url upper-case host", func(c *Config) { c.Server.PublicURL = "https://MCP.example.com" }, "server.public_url", "must be canonical"},
		{"public url ends in /mcp", func(c *Config) { c.Server.PublicURL = "https://mcp.example.com/mcp/" }, "server.public_url", "ends in /mcp; give the origin"},
		{"allowed origin with a path", func(c *Config) { c.Server.AllowedOrigins = []string{"https://a.example.com/app"} }, "server.allowed_origins[0]", "is not an origin"},
		{"allowed origin with a bad scheme", func(c *Config) { c.Server.AllowedOrigins = []string{"x", "ftp://a.example.com"} }, "server.allowed_origins[1]", `has scheme "ftp"`},
		{"allowed origin empty", func(c *Config) { c.Server.AllowedOrigins = []string{" "} }, "server.allowed_origins[0]", "is empty"},
		{"allowed origin with a space", func(c *Config) { c.Server.AllowedOrigins = []string{"a b"} }, "server.allowed_origins[0]", "is not a host"},
		{"title with control characters", func(c *Config) { c.Server.Title = "a\x1bb" }, "server.title", "control characters"},
		{"name with control characters", func(c *Config) { c.Server.Name = "a\nb" }, "server.name", "control characters"},
		{"local user with a space", func(c *Config) {
			localhost(c)
			c.Server.LocalUser = "a b"
		}, "server.local_user", "contains white space"},
		{"local user too long", func(c *Config) {
			localhost(c)
			c.Server.LocalUser = strings.Repeat("u", 256)
		}, "server.local_user", "longer than 255 bytes"},

		{"replica id with the separator", func(c *Config) { c.Server.ReplicaID = "r1_x" }, "server.replica_id", "is not a DNS label"},
		{"replica id upper-case", func(c *Config) { c.Server.ReplicaID = "R1" }, "server.replica_id", "is not a DNS label"},
		{"replica id with a dot", func(c *Config) { c.Server.ReplicaID = "mcp.example" }, "server.replica_id", "1 to 63 of a-z 0-9 -"},
		{"replica id too long", func(c *Config) { c.Server.ReplicaID = strings.Repeat("r", 64) }, "server.replica_id", "is not a DNS label"},

		{"negative duration", func(c *Config) { c.Limits.WorkerStopGrace = -1 }, "limits.worker_stop_grace", "is negative"},
		{"negative count", func(c *Config) { c.Limits.MaxConnections = -5 }, "limits.max_connections", "-5 is negative"},
		{"body limit too large", func(c *Config) { c.Limits.MaxBodyBytes = 2 << 30 }, "limits.max_body_bytes", "outside 1 byte to 1GiB"},
		{"body limit negative", func(c *Config) { c.Limits.MaxBodyBytes = -1 }, "limits.max_body_bytes", "outside"},
		{"write timeout negative", func(c *Config) { c.Limits.WriteTimeout = -1 }, "limits.write_timeout", "negative"},
		{"stream buffer over session buffer", func(c *Config) { c.Limits.MaxStreamBufferBytes = 128 << 20 }, "limits.max_stream_buffer_bytes", "more than limits.max_session_buffer_bytes"},
		{"user buffer negative", func(c *Config) { c.Limits.MaxUserBufferBytes = -1 }, "limits.max_user_buffer_bytes", "outside 1 byte to 1TiB"},
		{"worker message limit too small", func(c *Config) { c.Limits.MaxWorkerMessageBytes = 4096 }, "limits.max_worker_message_bytes", "outside 1MiB to 1GiB"},
		{"minimum drain beyond the drain timeout", func(c *Config) { c.Limits.DrainTimeout = 5 * time.Second }, "limits.drain_min", "longer than limits.drain_timeout"},
		{"negative minimum drain", func(c *Config) { c.Limits.DrainMin = -time.Second }, "limits.drain_min", "negative"},
		{"header timeout beyond request timeout", func(c *Config) { c.Limits.ReadHeaderTimeout = DefaultReadTimeout * 2 }, "limits.read_header_timeout", "longer than limits.read_timeout"},
		{"per-user sessions beyond total", func(c *Config) { c.Limits.MaxSessionsPerUser = DefaultMaxSessions + 1 }, "limits.max_sessions_per_user", "is more than limits.max_sessions"},
		{"one user's connections as many as all", func(c *Config) { c.Limits.MaxConnectionsPerPrincipal = c.Limits.MaxConnections }, "limits.max_connections_per_principal", "not below limits.max_connections"},
		{"negative connections per user", func(c *Config) { c.Limits.MaxConnectionsPerPrincipal = -1 }, "limits.max_connections_per_principal", "is negative"},
		{"stream lifetime too short", func(c *Config) { c.Limits.MaxStreamLifetime = DefaultMaxStreamLifetime / 1e6 }, "limits.max_stream_lifetime", "below 1s"},

		{"worker program empty", func(c *Config) { c.Worker.Command = []string{""} }, "worker.command", "program name (first word) is empty"},
		{"worker program missing", func(c *Config) { c.Worker.Command = []string{filepath.Join(f.dir, "nope")} }, "worker.command", "no such file or directory"},
		{"worker program is a directory", func(c *Config) { c.Worker.Command = []string{f.dir} }, "worker.command", "is a directory, not a program"},
		{"worker program not executable", func(c *Config) { c.Worker.Command = []string{f.plain} }, "worker.command", "is not executable (chmod +x)"},
		{"worker program not in PATH", func(c *Config) { c.Worker.Command = []string{"no-such-mcp-server-xyz"} }, "worker.command", "is not found in PATH"},
		{"safe tools without an external worker", func(c *Config) { c.Worker.SafeTools = []string{"x"} }, "worker.safe_tools", "applies to an external worker.command only"},
		{"safe methods without an external worker", func(c *Config) { c.Worker.SafeMethods = []string{"x/read"} }, "worker.safe_methods", "applies to an external worker.command only"},
		{"safe methods naming tools/call", func(c *Config) {
			c.Worker.Command = []string{"sh"}
			c.Worker.SafeMethods = []string{"tools/call"}
		}, "worker.safe_methods", "list read-only tools in worker.safe_tools instead"},
		{"safe methods naming a notification", func(c *Config) {
			c.Worker.Command = []string{"sh"}
			c.Worker.SafeMethods = []string{"notifications/cancelled"}
		}, "worker.safe_methods", "is not a request"},
		{"safe method listed twice", func(c *Config) {
			c.Worker.Command = []string{"sh"}
			c.Worker.SafeMethods = []string{"x/a", "x/a"}
		}, "worker.safe_methods", `"x/a" is listed twice`},
		{"worker env without =", func(c *Config) { c.Worker.Env = []string{"A=1", "JUSTANAME"} }, "worker.env[1]", "is not NAME=value"},
		{"worker env bad name", func(c *Config) { c.Worker.Env = []string{"1A=x"} }, "worker.env[0]", "is not NAME=value"},
		{"worker env reserved name", func(c *Config) { c.Worker.Env = []string{"MCPGATE_WORKER_USER=root"} }, "worker.env[0]", "MCPGATE_WORKER_USER is reserved"},
		{"worker dir missing", func(c *Config) { c.Worker.Dir = filepath.Join(f.dir, "nope") }, "worker.dir", "no such file or directory"},
		{"worker dir is a file", func(c *Config) { c.Worker.Dir = f.plain }, "worker.dir", "is not a directory"},
		{"toolset listed twice", func(c *Config) { c.Worker.Toolsets = []string{"session", "session"} }, "worker.toolsets", `"session" is listed twice`},
		{"toolset name with a space", func(c *Config) { c.Worker.Toolsets = []string{"a b"} }, "worker.toolsets", "is not a name"},

		{"unknown driver", func(c *Config) { c.Database.Driver = "mysql" }, "database.driver", `"mysql" is not a driver; use sqlite or postgres`},
		{"postgres without dsn", func(c *Config) { c.Database.Driver = "postgres" }, "database.dsn", "is required with driver postgres"},
		{"implausible dsn", func(c *Config) { c.Database = Database{Driver: "postgres", DSN: "hunter2"} }, "database.dsn", "is neither a postgres:// URL nor key=value pairs"},
		{"dsn with sqlite", func(c *Config) { c.Database.DSN = "postgres://x" }, "database.dsn", "database.driver is sqlite"},
		{"set_role with sqlite", func(c *Config) { c.Database.SetRole = true }, "database.set_role", "needs database.driver: postgres"},
		{"connect_as_user with sqlite", func(c *Config) { c.Database.ConnectAsUser = true }, "database.connect_as_user", "needs database.driver: postgres"},
		{"connect_as_user without user_role_member_of", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", ConnectAsUser: true}
		}, "database.user_role_member_of", "is required with database.set_role or database.connect_as_user"},
		{"set_role without user_role_member_of", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", SetRole: true}
		}, "database.user_role_member_of", "is required"},
		{"user_role_member_of alone", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", UserRoleMemberOf: "mcp_users"}
		}, "database.user_role_member_of", "neither database.set_role nor database.connect_as_user"},
		{"user_role_member_of too long", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", SetRole: true, UserRoleMemberOf: strings.Repeat("r", 64)}
		}, "database.user_role_member_of", "cannot be a PostgreSQL role name"},
		{"connect_as_user with set_role", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", SetRole: true, ConnectAsUser: true, UserRoleMemberOf: "mcp_users"}
		}, "database.connect_as_user", "are exclusive"},
		{"negative statement timeout", func(c *Config) { c.Database.StatementTimeout = -1 }, "database.statement_timeout", "is negative"},
		{"negative pool size", func(c *Config) { c.Worker.PoolSize = -1 }, "worker.pool_size", "outside 0 (off) to 256"},
		{"huge pool size", func(c *Config) { c.Worker.PoolSize = 257 }, "worker.pool_size", "outside 0 (off) to 256"},
		{"identity_on_stdin without command", func(c *Config) { c.Worker.IdentityOnStdin = true }, "worker.identity_on_stdin", "external worker.command only"},
		{"the pre-started marker in worker.env", func(c *Config) { c.Worker.Env = []string{"MCPGATE_WORKER_PRESTARTED=true"} }, "worker.env[0]", "is reserved"},
		{"negative max transactions", func(c *Config) { c.Database.MaxTransactions = -1 }, "database.max_transactions", "is negative"},
		{"negative transaction idle timeout", func(c *Config) { c.Database.TransactionIdleTimeout = -1 }, "database.transaction_idle_timeout", "is negative"},
		{"negative idle release", func(c *Config) { c.Database.IdleRelease = -1 }, "database.idle_release", "is negative"},
		{"negative db connections", func(c *Config) { c.Limits.MaxDBConnections = -1 }, "limits.max_db_connections", "is negative"},
		{"per-user db connections above the total", func(c *Config) {
			c.Limits.MaxDBConnections, c.Limits.MaxDBConnectionsPerUser = 8, 9
		}, "limits.max_db_connections_per_user", "is more than limits.max_db_connections 8"},
		{"per-user db connections below one per-user worker", func(c *Config) {
			c.Database = Database{Driver: "postgres", DSN: "host=/run/pg dbname=mcp", MaxTransactions: 8}
			c.Limits.MaxDBConnectionsPerUser = 5
		}, "limits.max_db_connections_per_user", "are fewer than one worker may hold (9), so that worker could never start (a per-user worker holds database.max_transactions 8 + 1)"},

		{"write scope without issuer", func(c *Config) {
			localhost(c)
			c.Auth.WriteScope = "mcp:write"
		}, "auth.write_scope", "is set but auth.issuer is empty"},
		{"hmac file without issuer", func(c *Config) {
			localhost(c)
			c.Auth.HMACSecretFile = f.secret
		}, "auth.hmac_secret_file", "is set but auth.issuer is empty"},
		{"issuer CA file without issuer", func(c *Config) {
			localhost(c)
			c.Auth.IssuerCAFile = f.secret
		}, "auth.issuer_ca_file", "is set but auth.issuer is empty"},
		{"issuer CA file missing", func(c *Config) {
			c.Auth.IssuerCAFile = filepath.Join(f.dir, "no-ca.pem")
		}, "auth.issuer_ca_file", "no such file or directory"},
		{"issuer over http", func(c *Config) { c.Auth.Issuer = "http://keycloak.example.com/realms/mcp" }, "auth.issuer", "must use https"},
		{"issuer not a URL", func(c *Config) { c.Auth.Issuer = "keycloak" }, "auth.issuer", "is not an absolute http(s) URL"},
		{"authorization server with a query", func(c *Config) {
			c.Auth.AuthorizationServers = []string{c.Auth.Issuer, "https://as.example.com?x"}
		}, "auth.authorization_servers[1]", "must not carry"},
		{"scope with a space", func(c *Config) { c.Auth.RequiredScopes = []string{"mcp use"} }, "auth.required_scopes", "is not a scope (RFC 6749 §3.3"},
		{"scope with a quote", func(c *Config) { c.Auth.ExtraScopes = []string{`a"b`} }, "auth.extra_scopes", "is not a scope"},
		{"write scope also required", func(c *Config) { c.Auth.RequiredScopes = []string{"mcp:use", "mcp:write"} }, "auth.write_scope", "is also in auth.required_scopes"},
		{"write scope also extra", func(c *Config) { c.Auth.ExtraScopes = []string{"mcp:write"} }, "auth.extra_scopes", "is the auth.write_scope"},
		{"extra scope also required", func(c *Config) { c.Auth.ExtraScopes = []string{"mcp:use"} }, "auth.extra_scopes", "is also in auth.required_scopes"},
		{"policies with a write scope", func(c *Config) {
			c.Auth.Policies = []Policy{{Scope: "mcp:read", Toolsets: []string{"listing"}}}
		}, "auth.write_scope", "is set together with auth.policies"},
		{"policy without who", func(c *Config) {
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Toolsets: []string{"listing"}}}
		}, "auth.policies[0]", "exactly one of scope and claim"},
		{"policy granting nothing", func(c *Config) {
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Scope: "mcp:read"}}
		}, "auth.policies[0]", "grants nothing"},
		{"policy unknown toolset", func(c *Config) {
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Scope: "mcp:read", Toolsets: []string{"lsting"}}}
		}, "auth.policies[0]", `unknown toolset "lsting"`},
		{"policy unknown tool", func(c *Config) {
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Scope: "mcp:read", Tools: []string{"apply_dll"}}}
		}, "auth.policies[0]", `tool "apply_dll" is not a tool of the built-in worker`},
		{"policy toolset not served", func(c *Config) {
			c.Worker.Toolsets = []string{"listing"}
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Scope: "mcp:read", Toolsets: []string{"mutation"}}}
		}, "auth.policies[0]", `toolset "mutation" is not in worker.toolsets`},
		{"policy impossible claim", func(c *Config) {
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Claim: "resource_access.roles", Values: []string{"x"}, Tools: []string{"query"}}}
		}, "auth.policies[0].claim", "cannot exist in a token"},
		{"policy claim without values", func(c *Config) {
			c.Auth.WriteScope, c.Auth.Policies = "", []Policy{{Claim: "groups", Tools: []string{"query"}}}
		}, "auth.policies[0].values", "must list the roles or groups"},
		{"initial scope not advertised", func(c *Config) { c.Auth.InitialScopes = []string{"mcp:read"} }, "auth.initial_scopes", `"mcp:read" is not advertised`},
		{"blank user claim", func(c *Config) { c.Auth.UserClaim = " " }, "auth.user_claim", "is empty"},
		{"alg none", func(c *Config) { c.Auth.Algorithms = []string{"RS256", "none"} }, "auth.algorithms", `"none" is never accepted`},
		{"unknown alg", func(c *Config) { c.Auth.Algorithms = []string{"rs256"} }, "auth.algorithms", `"rs256" is not a JWS algorithm`},
		{"hmac alg without a secret", func(c *Config) { c.Auth.Algorithms = []string{"HS256"} }, "auth.algorithms", "HS256 needs a shared secret in auth.hmac_secret_file"},
		{"secret with an explicit list without hmac", func(c *Config) {
			c.Auth.Algorithms = []string{"RS256"}
			c.Auth.HMACSecretFile = f.secret
		}, "auth.hmac_secret_file", "lists no HS256"},
		{"secret file missing", func(c *Config) {
			c.Auth.Algorithms = []string{"HS512"}
			c.Auth.HMACSecretFile = filepath.Join(f.dir, "nope")
		}, "auth.hmac_secret_file", "no such file or directory"},
		{"leeway too long", func(c *Config) { c.Auth.Leeway = 10 * 60e9 }, "auth.leeway", "is outside 0 to 5m"},
		{"leeway negative", func(c *Config) { c.Auth.Leeway = -1 }, "auth.leeway", "is outside"},
		{"token cap too small", func(c *Config) { c.Auth.MaxTokenBytes = 100 }, "auth.max_token_bytes", "outside 1KiB to 1MiB"},
		{"token cap too large", func(c *Config) { c.Auth.MaxTokenBytes = 2 << 20 }, "auth.max_token_bytes", "outside"},
		{"token cache size below -1", func(c *Config) { c.Auth.TokenCacheSize = -2 }, "auth.token_cache_size", "outside -1 (off) to 1000000"},
		{"dpop mode unknown", func(c *Config) { c.Auth.DPoP = "on" }, "auth.dpop", `"on" is not a mode; use off, allowed or required`},
		{"dpop nonce with dpop off", func(c *Config) { c.Auth.DPoP, c.Auth.DPoPNonce = "off", true }, "auth.dpop_nonce", "is set but auth.dpop is off"},
		{"dpop nonce secret without nonces", func(c *Config) { c.Auth.DPoPNonceSecretFile = f.secret }, "auth.dpop_nonce_secret_file", "auth.dpop_nonce is false"},
		{"dpop nonce secret missing", func(c *Config) {
			c.Auth.DPoPNonce, c.Auth.DPoPNonceSecretFile = true, filepath.Join(f.dir, "nope")
		}, "auth.dpop_nonce_secret_file", "no such file or directory"},
		{"dpop proof lifetime too long", func(c *Config) { c.Auth.DPoPProofLifetime = 10 * 60e9 }, "auth.dpop_proof_lifetime", "is outside 1s to 5m"},
		{"dpop nonce lifetime too short", func(c *Config) { c.Auth.DPoPNonceLifetime = 1e9 }, "auth.dpop_nonce_lifetime", "is outside 10s to 1h"},
		{"dpop replay cache too small", func(c *Config) { c.Auth.DPoPReplayCacheSize = 10 }, "auth.dpop_replay_cache_size", "outside 1000 to 16777216"},
		{"introspection without issuer", func(c *Config) {
			localhost(c)
			c.Auth.Introspection = "opaque"
		}, "auth.introspection", "is set but auth.issuer is empty"},
		{"unknown introspection mode", func(c *Config) { c.Auth.Introspection = "yes" }, "auth.introspection", `"yes" is not a mode; use off, opaque or all`},
		{"introspection without client id", func(c *Config) {
			c.Auth.Introspection = "all"
			c.Auth.IntrospectionClientSecretFile = f.secret
		}, "auth.introspection_client_id", "is required with auth.introspection all"},
		{"introspection without secret", func(c *Config) {
			c.Auth.Introspection = "opaque"
			c.Auth.IntrospectionClientID = "mcpgate"
		}, "auth.introspection_client_secret_file", "is required with auth.introspection opaque"},
		{"introspection secret missing", func(c *Config) {
			c.Auth.Introspection = "opaque"
			c.Auth.IntrospectionClientID = "mcpgate"
			c.Auth.IntrospectionClientSecretFile = filepath.Join(f.dir, "nope")
		}, "auth.introspection_client_secret_file", "no such file or directory"},
		{"introspection client while off", func(c *Config) { c.Auth.IntrospectionClientID = "mcpgate" }, "auth.introspection_client_id", "is set but auth.introspection is off"},
		{"introspection cache TTL too long", func(c *Config) { c.Auth.IntrospectionMaxCacheTTL = 2 * 3600e9 }, "auth.introspection_max_cache_ttl", "is outside 1s to 1h"},
		{"introspection slots too many", func(c *Config) { c.Auth.IntrospectionMaxConcurrent = 5000 }, "auth.introspection_max_concurrent", "is outside 1 to 1024"},

		{"cert without key", func(c *Config) { c.TLS.KeyFile = "" }, "tls.key_file", "give both files or neither"},
		{"key without cert", func(c *Config) { c.TLS.CertFile = "" }, "tls.cert_file", "give both files or neither"},
		{"cert missing", func(c *Config) { c.TLS.CertFile = filepath.Join(f.dir, "nope.pem") }, "tls.cert_file", "no such file or directory; `mcpgate certs` writes"},
		{"key is a directory", func(c *Config) { c.TLS.KeyFile = f.dir }, "tls.key_file", "is a directory, not a file"},
		{"client auth unknown", func(c *Config) { c.TLS.ClientAuth = "yes" }, "tls.client_auth", `"yes" is not a mode; use off, optional or required`},
		{"client auth without a CA", func(c *Config) { c.TLS.ClientAuth = ClientAuthRequired }, "tls.client_ca_file", "is required with tls.client_auth required"},
		{"client CA not PEM", func(c *Config) {
			c.TLS.ClientAuth, c.TLS.ClientCAFile = ClientAuthOptional, f.plain
		}, "tls.client_ca_file", "holds no PEM certificate"},
		{"client auth without TLS", func(c *Config) {
			localhost(c)
			ca, _, err := certs.SelfSigned(nil, time.Now())
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, "ca.pem"), ca, 0o644))
			c.TLS, c.Server.Insecure = TLS{ClientAuth: ClientAuthOptional, ClientCAFile: filepath.Join(f.dir, "ca.pem")}, true
		}, "tls.client_auth", "needs the gateway to serve TLS itself"},
		{"client CA with client auth off", func(c *Config) { c.TLS.ClientCAFile = f.plain }, "tls.client_ca_file", "is set but tls.client_auth is off"},
		{"client cert proxy not an address", func(c *Config) { c.TLS.ClientCertProxies = []string{"proxy.local"} }, "tls.client_cert_proxies", `"proxy.local" is neither an IP address nor a CIDR prefix`},

		{"bad log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level", `"verbose" is not a level`},
		{"bad log format", func(c *Config) { c.Log.Format = "xml" }, "log.format", `"xml" is not a format`},

		{"audit path in a missing directory", func(c *Config) { c.Audit.Path = "/nonexistent/dir/audit.jsonl" }, "audit.path", "does not exist"},
		{"audit path a directory", func(c *Config) { c.Audit.Path = os.TempDir() }, "audit.path", "is a directory"},
		{"audit argument cut too small", func(c *Config) { c.Audit.MaxArgumentBytes = 8 }, "audit.max_argument_bytes", "out of range"},
		{"audit redact empty name", func(c *Config) { c.Audit.RedactArguments = []string{""} }, "audit.redact_arguments", "not an argument name"},
		{"metrics listen not host:port", func(c *Config) { c.Metrics.Listen = "9464" }, "metrics.listen", "not host:port"},
		{"metrics listen every interface", func(c *Config) { c.Metrics.Listen = ":9464" }, "metrics.listen", "every interface"},
		{"tracing endpoint not a URL", func(c *Config) { c.Tracing.OTLPEndpoint = "collector:4318" }, "tracing.otlp_endpoint", "not an http(s) URL"},
		{"tracing endpoint with a password", func(c *Config) { c.Tracing.OTLPEndpoint = "https://u:p@otel.example.com" }, "tracing.otlp_endpoint", "user info"},
		{"metrics listen the public listener", func(c *Config) { c.Metrics.Listen = c.Server.Listen }, "metrics.listen", "listener of their own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.network()
			tt.mutate(c)
			err := c.Validate()
			require.Error(t, err)
			ps := Problems(err)
			require.Len(t, ps, 1, "got %v", err)
			if ps[0].Key != tt.key {
				t.Errorf("got key %q, want %q (%v)", ps[0].Key, tt.key, err)
			}
			assert.Contains(t, ps[0].Message, tt.want)
			assert.Equal(t, "config: "+tt.key+": "+ps[0].Message, err.Error())
			assert.NotContains(t, err.Error(), "hunter2", "a secret was echoed")
		})
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	c := &Config{
		Server:   Server{Listen: "0.0.0.0:80", PublicURL: "http://x.example.com/mcp"},
		Limits:   Limits{MaxConnections: -1},
		Database: Database{Driver: "oracle"},
		Auth:     Auth{Issuer: "http://idp.example.com", WriteScope: "w", ExtraScopes: []string{"w"}, Algorithms: []string{"none"}},
		TLS:      TLS{CertFile: "/nonexistent/cert.pem"},
		Log:      Log{Level: "loud", Format: "xml"},
	}
	var keys []string
	for _, p := range Problems(c.Validate()) {
		keys = append(keys, p.Key)
	}
	assert.ElementsMatch(t, []string{
		"server.public_url", "limits.max_connections", "database.driver",
		"auth.issuer", "auth.extra_scopes", "auth.algorithms",
		"tls.key_file", "tls.cert_file", "log.level", "log.format",
	}, keys)
}

func TestValidateNeverEchoesSecrets(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("hunter2-topsecret\n"), 0o600))
	c := Default()
	c.Server.PublicURL = "https://mcp.example.com"
	c.Auth.Issuer = "https://idp.example.com"
	c.Auth.Algorithms = []string{"HS256"}
	c.Auth.HMACSecretFile = short
	c.Database = Database{Driver: "postgres", DSN: "hunter2-topsecret"}
	c.Worker.Env = []string{"hunter2-topsecret"}
	err := c.Validate()
	require.Error(t, err)
	assert.Len(t, Problems(err), 3)
	assert.Contains(t, err.Error(), "holds 17 bytes; an HMAC secret needs at least 32")
	assert.NotContains(t, err.Error(), "hunter2")
	_, err = c.HMACSecret()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestHMACSecret(t *testing.T) {
	dir := t.TempDir()
	secret := strings.Repeat("k", 40)
	tests := []struct {
		name, content string
		want          string
		err           string
	}{
		{"plain", secret, secret, ""},
		{"trailing newline dropped", secret + "\n", secret, ""},
		{"trailing CRLF dropped", secret + "\r\n", secret, ""},
		{"only one newline dropped", secret + "\n\n", secret + "\n", ""},
		{"too short", "short\n", "", "holds 5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			require.NoError(t, os.WriteFile(p, []byte(tt.content), 0o600))
			c := &Config{Auth: Auth{HMACSecretFile: p}}
			got, err := c.HMACSecret()
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
	_, err := (&Config{}).HMACSecret()
	assert.EqualError(t, err, "config: auth.hmac_secret_file is not set")
}

func TestResource(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"public url", Config{Server: Server{PublicURL: "https://mcp.example.com"}}, "https://mcp.example.com/mcp"},
		{"public url with trailing slash", Config{Server: Server{PublicURL: "https://mcp.example.com/"}}, "https://mcp.example.com/mcp"},
		{"public url with prefix", Config{Server: Server{PublicURL: "https://example.com/gw"}}, "https://example.com/gw/mcp"},
		{"default listen", *Default(), "http://127.0.0.1:8000/mcp"},
		{"tls", Config{Server: Server{Listen: "localhost:8443"}, TLS: TLS{CertFile: "c", KeyFile: "k"}}, "https://localhost:8443/mcp"},
		{"ipv6", Config{Server: Server{Listen: "[::1]:8000"}}, "http://[::1]:8000/mcp"},
		{"empty host", Config{Server: Server{Listen: ":8000"}}, "http://localhost:8000/mcp"},
		{"unspecified host", Config{Server: Server{Listen: "0.0.0.0:8000"}}, "http://localhost:8000/mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Resource(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:8000": true, "127.1.2.3:1": true, "localhost:80": true, "LOCALHOST:80": true,
		"[::1]:8000": true, "0.0.0.0:8000": false, ":8000": false, "[::]:8000": false,
		"192.168.1.5:8000": false, "mcp.example.com:443": false, "garbage": false,
	} {
		t.Run(listen, func(t *testing.T) {
			c := &Config{Server: Server{Listen: listen}}
			if got := c.Loopback(); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "bogus": slog.LevelInfo,
	} {
		c := &Config{Log: Log{Level: in}}
		if got := c.LogLevel(); got != want {
			t.Errorf("LogLevel(%q): got %v, want %v", in, got, want)
		}
	}
}

// TestMaxHeaderBytes: the head bound follows auth.max_token_bytes, so a
// token over its limit is read and refused with 401, not cut off with 431.
func TestMaxHeaderBytes(t *testing.T) {
	for _, tc := range []struct {
		token ByteSize
		want  int
	}{
		{16 << 10, 256 << 10},
		{1 << 20, 1<<20 + 64<<10},
	} {
		c := Default()
		c.Auth.MaxTokenBytes = tc.token
		if got := c.MaxHeaderBytes(); got != tc.want {
			t.Errorf("max_token_bytes %d: got MaxHeaderBytes %d, want %d", tc.token, got, tc.want)
		}
		if got := c.MaxHeaderBytes(); got < int(tc.token)+headerSlack {
			t.Errorf("max_token_bytes %d: MaxHeaderBytes %d leaves no room for the rest of the head", tc.token, got)
		}
	}
}
