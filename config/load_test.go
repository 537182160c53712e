package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// env returns a Getenv over a fixed map, so no test sees the real
// environment.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeFile writes content to name in a fresh temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestLoadDefaults(t *testing.T) {
	c, err := Loader{Getenv: env(nil)}.Load("", nil)
	require.NoError(t, err)
	assert.Equal(t, Default(), c)

	want := map[string]any{
		"listen":                          "127.0.0.1:8000",
		"name":                            "mcpgate",
		"local_user":                      "",
		"replica_id":                      "",
		"max_body_bytes":                  ByteSize(8 << 20),
		"max_connections":                 4096,
		"read_header_timeout":             10 * time.Second,
		"read_timeout":                    30 * time.Second,
		"idle_timeout":                    2 * time.Minute,
		"max_sessions":                    1024,
		"max_sessions_per_user":           256,
		"max_sessions_per_worker":         128,
		"session_idle_timeout":            30 * time.Minute,
		"worker_start_timeout":            10 * time.Second,
		"worker_stop_grace":               5 * time.Second,
		"write_timeout":                   30 * time.Second,
		"max_stream_buffer_bytes":         ByteSize(32 << 20),
		"max_session_buffer_bytes":        ByteSize(64 << 20),
		"max_user_buffer_bytes":           ByteSize(128 << 20),
		"max_unauthenticated_per_address": 64,
		"unauthenticated_idle_timeout":    10 * time.Second,
		"drain_timeout":                   30 * time.Second,
		"drain_min":                       6 * time.Second,
		"max_worker_message_bytes":        ByteSize(64 << 20),
		"driver":                          "sqlite",
		"path":                            "data/mcpgate.db",
		"statement_timeout":               30 * time.Second,
		"lock_timeout":                    5 * time.Second,
		"max_rows":                        500,
		"checks_timeout":                  2 * time.Minute,
		"max_transactions":                4,
		"idle_release":                    10 * time.Second,
		"max_db_connections":              64,
		"max_db_connections_per_user":     10,
		"pool_size":                       4,
		"transaction_idle_timeout":        30 * time.Minute,
		"user_claim":                      "sub",
		"leeway":                          60 * time.Second,
		"max_token_bytes":                 ByteSize(16 << 10),
		"level":                           "info",
		"format":                          "text",
	}
	got := map[string]any{
		"listen":                          c.Server.Listen,
		"name":                            c.Server.Name,
		"local_user":                      c.Server.LocalUser,
		"replica_id":                      c.Server.ReplicaID,
		"max_body_bytes":                  c.Limits.MaxBodyBytes,
		"max_connections":                 c.Limits.MaxConnections,
		"read_header_timeout":             c.Limits.ReadHeaderTimeout,
		"read_timeout":                    c.Limits.ReadTimeout,
		"idle_timeout":                    c.Limits.IdleTimeout,
		"max_sessions":                    c.Limits.MaxSessions,
		"max_sessions_per_user":           c.Limits.MaxSessionsPerUser,
		"max_sessions_per_worker":         c.Limits.MaxSessionsPerWorker,
		"max_db_connections":              c.Limits.MaxDBConnections,
		"max_db_connections_per_user":     c.Limits.MaxDBConnectionsPerUser,
		"session_idle_timeout":            c.Limits.SessionIdleTimeout,
		"worker_start_timeout":            c.Limits.WorkerStartTimeout,
		"worker_stop_grace":               c.Limits.WorkerStopGrace,
		"write_timeout":                   c.Limits.WriteTimeout,
		"max_stream_buffer_bytes":         c.Limits.MaxStreamBufferBytes,
		"max_session_buffer_bytes":        c.Limits.MaxSessionBufferBytes,
		"max_user_buffer_bytes":           c.Limits.MaxUserBufferBytes,
		"max_unauthenticated_per_address": c.Limits.MaxUnauthenticatedPerAddress,
		"unauthenticated_idle_timeout":    c.Limits.UnauthenticatedIdleTimeout,
		"drain_timeout":                   c.Limits.DrainTimeout,
		"drain_min":                       c.Limits.DrainMin,
		"max_worker_message_bytes":        c.Limits.MaxWorkerMessageBytes,
		"driver":                          c.Database.Driver,
		"path":                            c.Database.Path,
		"statement_timeout":               c.Database.StatementTimeout,
		"lock_timeout":                    c.Database.LockTimeout,
		"max_rows":                        c.Database.MaxRows,
		"checks_timeout":                  c.Database.ChecksTimeout,
		"max_transactions":                c.Database.MaxTransactions,
		"idle_release":                    c.Database.IdleRelease,
		"pool_size":                       c.Worker.PoolSize,
		"transaction_idle_timeout":        c.Database.TransactionIdleTimeout,
		"user_claim":                      c.Auth.UserClaim,
		"leeway":                          c.Auth.Leeway,
		"max_token_bytes":                 c.Auth.MaxTokenBytes,
		"level":                           c.Log.Level,
		"format":                          c.Log.Format,
	}
	for k, w := range want {
		t.Run(k, func(t *testing.T) {
			if got[k] != w {
				t.Errorf("got %v, want %v", got[k], w)
			}
		})
	}
	assert.Equal(t, auth.DefaultAlgorithms(), c.Auth.Algorithms)
	assert.False(t, c.Authenticated())
	assert.NoError(t, c.Validate(), "the defaults must validate")
}

const fullFile = `
server:
  listen: 127.0.0.1:9000
  public_url: https://mcp.example.com
  allowed_origins: [https://app.example.com, tools.example.com]
  read_only: true
  title: Test gateway
  name: gw
  local_user: alice
limits:
  max_body_bytes: 1MiB
  max_connections: 10
  read_header_timeout: 2s
  read_timeout: 20s
  idle_timeout: 1m
  max_sessions: 100
  max_sessions_per_user: 5
  session_idle_timeout: 10m
  worker_start_timeout: 3s
  max_worker_message_bytes: 2MiB
  worker_stop_grace: 1s
worker:
  command: ["/usr/bin/env", "my-server", "--flag=a,b"]
  env:
    PATH: /opt/bin
    Mixed_Case: "yes"
  dir: /tmp
  toolsets: [session, browsing]
  safe_tools: [read_thing]
  limits:
    memory: 512MiB
    cpu_time: 10m
    cpu: 1.5
database:
  driver: postgres
  dsn: postgres://mcp@db.example.com/mcp
  set_role: true
  user_role_member_of: mcp_users
  statement_timeout: 5s
auth:
  issuer: https://kc.example.com/realms/mcp
  required_scopes: [mcp:use]
  write_scope: mcp:write
  extra_scopes: profile offline_access
  user_claim: preferred_username
  algorithms: [RS256, ES256]
  require_at_jwt: true
  leeway: 30s
  max_token_bytes: 8192
tls:
  cert_file: certs/cert.pem
  key_file: certs/key.pem
log:
  level: debug
  format: json
`

func TestLoadFile(t *testing.T) {
	c, err := Loader{Getenv: env(nil)}.Load(writeFile(t, "full.yaml", fullFile), nil)
	require.NoError(t, err)
	want := &Config{
		Server: Server{
			Listen: "127.0.0.1:9000", IdleExit: DefaultIdleExit, PublicURL: "https://mcp.example.com",
			AllowedOrigins: []string{"https://app.example.com", "tools.example.com"},
			ReadOnly:       true, Title: "Test gateway", Name: "gw", LocalUser: "alice",
		},
		Limits: Limits{
			MaxBodyBytes: 1 << 20, MaxConnections: 10, MaxConnectionsPerPrincipal: 2, MaxStreamLifetime: time.Hour,
			ReadHeaderTimeout: 2 * time.Second,
			ReadTimeout:       20 * time.Second, IdleTimeout: time.Minute, MaxSessions: 100,
			MaxSessionsPerUser: 5, MaxSessionsPerWorker: DefaultMaxSessionsPerWorker, SessionIdleTimeout: 10 * time.Minute,
			MaxDBConnections: DefaultMaxDBConnections, MaxDBConnectionsPerUser: DefaultMaxDBConnectionsPerUser,
			WorkerStartTimeout: 3 * time.Second, WorkerStopGrace: time.Second,
			WriteTimeout: DefaultWriteTimeout, MaxStreamBufferBytes: DefaultMaxStreamBuffer,
			MaxSessionBufferBytes: DefaultMaxSessionBuffer, MaxUserBufferBytes: DefaultMaxUserBuffer,
			MaxUnauthenticatedPerAddress: DefaultMaxUnauthPerAddr, UnauthenticatedIdleTimeout: DefaultUnauthIdleTimeout,
			DrainTimeout:          DefaultDrainTimeout,
			DrainMin:              DefaultDrainMin,
			MaxWorkerMessageBytes: 2 << 20,
		},
		Worker: Worker{
			Command:   []string{"/usr/bin/env", "my-server", "--flag=a,b"},
			Env:       []string{"Mixed_Case=yes", "PATH=/opt/bin"},
			Dir:       "/tmp",
			Toolsets:  []string{"session", "browsing"},
			SafeTools: []string{"read_thing"},
			Limits:    WorkerLimits{Memory: 512 << 20, CPUTime: 10 * time.Minute, CPU: 1.5},
			PoolSize:  DefaultPoolSize,
			RunAs:     DefaultRunAs,
			Sandbox:   WorkerSandbox{Enabled: true},
		},
		Database: Database{
			Driver: "postgres", Path: DefaultDatabasePath, DSN: "postgres://mcp@db.example.com/mcp",
			SetRole: true, UserRoleMemberOf: "mcp_users", StatementTimeout: 5 * time.Second, LockTimeout: DefaultLockTimeout, MaxRows: DefaultMaxRows,
			ChecksTimeout: DefaultChecksTimeout,
			// The transaction idle timeout follows session_idle_timeout.
			MaxTransactions: DefaultMaxTransactions, TransactionIdleTimeout: 10 * time.Minute,
			IdleRelease: DefaultIdleRelease,
		},
		Auth: Auth{
			Issuer:               "https://kc.example.com/realms/mcp",
			AuthorizationServers: []string{"https://kc.example.com/realms/mcp"},
			RequiredScopes:       []string{"mcp:use"}, WriteScope: "mcp:write",
			ExtraScopes: []string{"profile", "offline_access"}, UserClaim: "preferred_username",
			Algorithms: []string{"RS256", "ES256"}, RequireATJWT: true,
			Leeway: 30 * time.Second, MaxTokenBytes: 8192,
			TokenCacheSize: DefaultTokenCacheSize, Introspection: IntrospectionOff,
			IntrospectionMaxCacheTTL: DefaultIntrospectionTTL, IntrospectionMaxConcurrent: DefaultIntrospectionSlots,
			IntrospectionPerAddressPerMinute: DefaultIntrospectionRate,
			DPoP:                             DefaultDPoP, DPoPProofLifetime: DefaultDPoPProofLifetime,
			DPoPNonceLifetime: DefaultDPoPNonceLifetime, DPoPReplayCacheSize: DefaultDPoPReplayCache,
		},
		TLS:     TLS{CertFile: "certs/cert.pem", KeyFile: "certs/key.pem", ClientAuth: ClientAuthOff},
		Log:     Log{Level: "debug", Format: "json"},
		Audit:   Audit{MaxArgumentBytes: DefaultMaxArgumentBytes},
		Metrics: Metrics{Listen: DefaultMetricsListen},
		Web:     Web{Enabled: true},
	}
	assert.Equal(t, want, c)
	assert.Equal(t, "https://mcp.example.com/mcp", c.Resource())
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "p.yaml", `
server:
  listen: 127.0.0.1:9000
  title: from file
auth:
  write_scope: file:write
  user_claim: file_claim
log:
  level: warn
`)
	tests := []struct {
		name  string
		env   map[string]string
		flags []string
		check func(t *testing.T, c *Config)
	}{
		{"file over defaults", nil, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, "127.0.0.1:9000", c.Server.Listen)
			assert.Equal(t, "from file", c.Server.Title)
			assert.Equal(t, "warn", c.Log.Level)
			assert.Equal(t, "text", c.Log.Format)
		}},
		{"env over file", map[string]string{
			"MCPGATE_SERVER_LISTEN": "127.0.0.1:9100", "MCPGATE_LOG_LEVEL": "error",
			"MCPGATE_LIMITS_READ_TIMEOUT": "45s", "MCPGATE_LIMITS_MAX_BODY_BYTES": "2MiB",
			"MCPGATE_SERVER_READ_ONLY": "true", "MCPGATE_LIMITS_MAX_SESSIONS": "7",
		}, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, "127.0.0.1:9100", c.Server.Listen)
			assert.Equal(t, "error", c.Log.Level)
			assert.Equal(t, 45*time.Second, c.Limits.ReadTimeout)
			assert.Equal(t, ByteSize(2<<20), c.Limits.MaxBodyBytes)
			assert.True(t, c.Server.ReadOnly)
			assert.Equal(t, 7, c.Limits.MaxSessions)
			assert.Equal(t, "from file", c.Server.Title, "keys the env leaves alone keep the file's value")
		}},
		{"env lists are space or comma separated", map[string]string{
			"MCPGATE_AUTH_EXTRA_SCOPES":      "profile, offline_access  email",
			"MCPGATE_SERVER_ALLOWED_ORIGINS": "a.example.com,b.example.com",
		}, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"profile", "offline_access", "email"}, c.Auth.ExtraScopes)
			assert.Equal(t, []string{"a.example.com", "b.example.com"}, c.Server.AllowedOrigins)
		}},
		{"env command and env are shell words", map[string]string{
			"MCPGATE_WORKER_COMMAND": `/opt/my\ server --name "a b" 'c,d'`,
			"MCPGATE_WORKER_ENV":     `NO_PROXY=a,b GREETING="hello world"`,
		}, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"/opt/my server", "--name", "a b", "c,d"}, c.Worker.Command)
			assert.Equal(t, []string{"NO_PROXY=a,b", "GREETING=hello world"}, c.Worker.Env)
		}},
		{"legacy names", map[string]string{
			"MCP_WRITE_SCOPE": "legacy:write", "MCP_EXTRA_SCOPES": "profile offline_access",
			"MCP_USERID_CLAIM": "preferred_username",
		}, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, "legacy:write", c.Auth.WriteScope)
			assert.Equal(t, []string{"profile", "offline_access"}, c.Auth.ExtraScopes)
			assert.Equal(t, "preferred_username", c.Auth.UserClaim)
		}},
		{"MCPGATE_ name wins over legacy name", map[string]string{
			"MCP_WRITE_SCOPE": "legacy:write", "MCPGATE_AUTH_WRITE_SCOPE": "new:write",
			"MCP_USERID_CLAIM": "legacy_claim", "MCPGATE_AUTH_USER_CLAIM": "new_claim",
		}, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, "new:write", c.Auth.WriteScope)
			assert.Equal(t, "new_claim", c.Auth.UserClaim)
		}},
		{"empty env counts as unset", map[string]string{"MCPGATE_SERVER_TITLE": ""}, nil, func(t *testing.T, c *Config) {
			assert.Equal(t, "from file", c.Server.Title)
		}},
		{"flags over env", map[string]string{
			"MCPGATE_SERVER_LISTEN": "127.0.0.1:9100", "MCPGATE_SERVER_TITLE": "from env",
		}, []string{"--listen", "127.0.0.1:9200", "--read-only", "--worker-command", "/bin/srv -v 'x y'", "--log-level=debug"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, "127.0.0.1:9200", c.Server.Listen)
				assert.Equal(t, "from env", c.Server.Title, "an unset flag does not override")
				assert.True(t, c.Server.ReadOnly)
				assert.Equal(t, []string{"/bin/srv", "-v", "x y"}, c.Worker.Command)
				assert.Equal(t, "debug", c.Log.Level)
			}},
		{"unset flag defaults do not override the file", nil, []string{"--title", "flag title"}, func(t *testing.T, c *Config) {
			assert.Equal(t, "127.0.0.1:9000", c.Server.Listen, "--listen's shown default must not beat the file")
			assert.Equal(t, "warn", c.Log.Level)
			assert.Equal(t, "flag title", c.Server.Title)
		}},
		{"every flag", nil, []string{"--insecure", "--public-url", "https://gw.example.com", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--log-format", "json"},
			func(t *testing.T, c *Config) {
				assert.True(t, c.Server.Insecure)
				assert.Equal(t, "https://gw.example.com", c.Server.PublicURL)
				assert.Equal(t, TLS{CertFile: "c.pem", KeyFile: "k.pem", ClientAuth: ClientAuthOff}, c.TLS)
				assert.Equal(t, "json", c.Log.Format)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Flags()
			require.NoError(t, fs.Parse(tt.flags))
			c, err := Loader{Getenv: env(tt.env)}.Load(file, fs)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadConfigPath(t *testing.T) {
	a := writeFile(t, "a.yaml", "server:\n  title: A\n")
	b := writeFile(t, "b.yaml", "server:\n  title: B\n")
	c := writeFile(t, "c.yaml", "server:\n  title: C\n")
	tests := []struct {
		name, path string
		flags      []string
		env        map[string]string
		want       string
	}{
		{"argument", a, []string{"--config", b}, map[string]string{EnvConfigFile: c}, "A"},
		{"--config flag", "", []string{"--config", b}, map[string]string{EnvConfigFile: c}, "B"},
		{"MCPGATE_CONFIG", "", nil, map[string]string{EnvConfigFile: c}, "C"},
		{"none", "", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Flags()
			require.NoError(t, fs.Parse(tt.flags))
			cfg, err := Loader{Getenv: env(tt.env)}.Load(tt.path, fs)
			require.NoError(t, err)
			if cfg.Server.Title != tt.want {
				t.Errorf("got title %q, want %q", cfg.Server.Title, tt.want)
			}
		})
	}
}

func TestLoadFileForms(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(t *testing.T, c *Config)
	}{
		{"empty file", "", func(t *testing.T, c *Config) { assert.Equal(t, Default(), c) }},
		{"comments only", "# nothing\n", func(t *testing.T, c *Config) { assert.Equal(t, Default(), c) }},
		{"empty section", "server:\n", func(t *testing.T, c *Config) { assert.Equal(t, Default(), c) }},
		{"null value keeps the default", "server:\n  listen:\n", func(t *testing.T, c *Config) {
			assert.Equal(t, DefaultListen, c.Server.Listen)
		}},
		{"command as a string is split like shell words", "worker:\n  command: \"/bin/srv --x 'a b'\"\n", func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"/bin/srv", "--x", "a b"}, c.Worker.Command)
		}},
		{"env as a list keeps its order", "worker:\n  env: [B=2, a=1]\n", func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"B=2", "a=1"}, c.Worker.Env)
		}},
		{"env mapping keeps the case of names", "worker:\n  env:\n    HOME: /h\n    lower: 1\n    Empty:\n", func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"Empty=", "HOME=/h", "lower=1"}, c.Worker.Env)
		}},
		{"list as one string", "worker:\n  toolsets: session, browsing search\n", func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"session", "browsing", "search"}, c.Worker.Toolsets)
		}},
		{"sizes", "limits:\n  max_body_bytes: 512KiB\nauth:\n  max_token_bytes: 4096\n", func(t *testing.T, c *Config) {
			assert.Equal(t, ByteSize(512<<10), c.Limits.MaxBodyBytes)
			assert.Equal(t, ByteSize(4096), c.Auth.MaxTokenBytes)
		}},
		{"zero means default", "limits:\n  max_sessions: 0\n  read_timeout: 0\n", func(t *testing.T, c *Config) {
			assert.Equal(t, DefaultMaxSessions, c.Limits.MaxSessions)
			assert.Equal(t, DefaultReadTimeout, c.Limits.ReadTimeout)
		}},
		{"keys are case-insensitive like viper's", "Server:\n  Listen: 127.0.0.1:1\n", func(t *testing.T, c *Config) {
			assert.Equal(t, "127.0.0.1:1", c.Server.Listen)
		}},
		{"an hmac secret adds HS algorithms to the default list", "auth:\n  issuer: https://i.example.com\n  hmac_secret_file: s\n", func(t *testing.T, c *Config) {
			assert.Equal(t, append(auth.DefaultAlgorithms(), "HS256", "HS384", "HS512"), c.Auth.Algorithms)
		}},
		{"an explicit algorithm list is kept", "auth:\n  hmac_secret_file: s\n  algorithms: [HS512]\n", func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"HS512"}, c.Auth.Algorithms)
		}},
		{"authorization_servers default to the issuer", "auth:\n  issuer: https://i.example.com\n", func(t *testing.T, c *Config) {
			assert.Equal(t, []string{"https://i.example.com"}, c.Auth.AuthorizationServers)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Loader{Getenv: env(nil)}.Load(writeFile(t, "f.yaml", tt.yaml), nil)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		env   map[string]string
		flags []string
		want  []string // substrings, one per expected error, in any order
	}{
		{"unknown key with suggestion", "server:\n  listn: x\n", nil, nil,
			[]string{`unknown key "server.listn" (did you mean "server.listen"?)`}},
		{"key in the wrong section", "auth:\n  listen: x\n", nil, nil,
			[]string{`unknown key "auth.listen" (did you mean "server.listen"?)`}},
		{"top-level key outside any section", "issuer: https://x\n", nil, nil,
			[]string{`unknown key "issuer" (did you mean "auth.issuer"?)`}},
		{"misspelt section", "sever:\n  listen: x\n", nil, nil,
			[]string{`unknown key "sever" (did you mean "server"?)`}},
		{"unknown key without a near match", "server:\n  frobnicate: 1\n", nil, nil,
			[]string{`unknown key "server.frobnicate"; the keys are listed in docs/configuration.md`}},
		{"section not a mapping", "tls: 5\n", nil, nil,
			[]string{"tls must be a mapping of its keys, not a number"}},
		{"duration without unit", "limits:\n  read_timeout: 30\n", nil, nil,
			[]string{"limits.read_timeout: duration 30 has no unit; write it with one, such as 30s"}},
		{"bad duration", "limits:\n  idle_timeout: 3 minutes\n", nil, nil,
			[]string{`limits.idle_timeout: invalid duration "3 minutes"`}},
		{"bad size", "limits:\n  max_body_bytes: 8 megs\n", nil, nil,
			[]string{`limits.max_body_bytes: invalid size "8 megs"`}},
		{"bad number", "limits:\n  max_connections: lots\n", nil, nil,
			[]string{`limits.max_connections: "lots" is not a whole number`}},
		{"bad bool", "server:\n  read_only: maybe\n", nil, nil,
			[]string{`server.read_only: "maybe" is not true or false`}},
		{"unterminated quote in command", "worker:\n  command: \"/bin/x 'a\"\n", nil, nil,
			[]string{"worker.command: unterminated ' quote"}},
		{"bad env value names the variable", "", map[string]string{"MCPGATE_LIMITS_MAX_SESSIONS": "many"}, nil,
			[]string{`limits.max_sessions (from MCPGATE_LIMITS_MAX_SESSIONS): "many" is not a whole number`}},
		{"bad legacy env value names the variable", "", map[string]string{"MCP_EXTRA_SCOPES": "x", "MCPGATE_AUTH_LEEWAY": "soon"}, nil,
			[]string{`auth.leeway (from MCPGATE_AUTH_LEEWAY): invalid duration "soon"`}},
		{"bad flag value names the flag", "", nil, []string{"--worker-command", `"unterminated`},
			[]string{`worker.command (from --worker-command): unterminated " quote`}},
		{"not YAML", "server: [\n", nil, nil, []string{"the file must be a YAML mapping of sections"}},
		{"every problem at once", "server:\n  listn: x\n  read_only: maybe\nlimits:\n  read_timeout: 30\nbogus: 1\n",
			map[string]string{"MCPGATE_LIMITS_MAX_SESSIONS": "many"}, nil,
			[]string{`"server.listn"`, `server.read_only:`, `limits.read_timeout:`, `unknown key "bogus"`, `MCPGATE_LIMITS_MAX_SESSIONS`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Flags()
			require.NoError(t, fs.Parse(tt.flags))
			path := writeFile(t, "bad.yaml", tt.yaml)
			c, err := Loader{Getenv: env(tt.env)}.Load(path, fs)
			require.Error(t, err)
			assert.Nil(t, c)
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			for _, l := range lines {
				assert.True(t, strings.HasPrefix(l, "config: "), "error line %q lacks the package prefix", l)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Loader{Getenv: env(nil)}.Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config: read config file:")
	assert.Contains(t, err.Error(), "nope.yaml")
}

func TestLoadIgnoresForeignFlags(t *testing.T) {
	fs := Flags()
	fs.Bool("verbose", false, "a flag of the caller's own")
	require.NoError(t, fs.Parse([]string{"--verbose"}))
	c, err := Loader{Getenv: env(nil)}.Load("", fs)
	require.NoError(t, err)
	assert.Equal(t, Default(), c)
}

func TestLoadSliceFlag(t *testing.T) {
	fs := Flags()
	fs.StringSlice("toolsets", nil, "")
	flagKeys["toolsets"] = "worker.toolsets"
	t.Cleanup(func() { delete(flagKeys, "toolsets") })
	require.NoError(t, fs.Parse([]string{"--toolsets", "a,b", "--toolsets", "c"}))
	c, err := Loader{Getenv: env(nil)}.Load("", fs)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, c.Worker.Toolsets)
}

func TestKeysAndEnvNames(t *testing.T) {
	keys := Keys()
	assert.Len(t, keys, 123)
	assert.Contains(t, keys, "worker.limits.memory")
	assert.Equal(t, "MCPGATE_WORKER_LIMITS_MEMORY", EnvName("worker.limits.memory"))
	assert.Contains(t, keys, "auth.issuer")
	assert.Contains(t, keys, "limits.max_sessions_per_user")
	assert.Equal(t, "MCPGATE_AUTH_ISSUER", EnvName("auth.issuer"))
	assert.Equal(t, "MCPGATE_SERVER_PUBLIC_URL", EnvName("server.public_url"))
	for flag, k := range flagKeys {
		assert.Contains(t, keys, k, "flag --%s", flag)
		assert.NotNil(t, Flags().Lookup(flag), "flag --%s", flag)
	}
	for k := range LegacyEnv {
		assert.Contains(t, keys, k)
	}
}

func TestByteSizeParsing(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		err  bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"8MiB", 8 << 20, false},
		{"8mib", 8 << 20, false},
		{"512 KiB", 512 << 10, false},
		{"1GiB", 1 << 30, false},
		{"1.5KiB", 1536, false},
		{"2MB", 2000000, false},
		{"1k", 1000, false},
		{"10B", 10, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"8 megs", 0, true},
		{"-1", 0, true},
		{"1.5B", 0, true},
		{"99999999999GiB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseByteSize(tt.in)
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestByteSizeString(t *testing.T) {
	for in, want := range map[ByteSize]string{0: "0", 100: "100", 1024: "1KiB", 8 << 20: "8MiB", 3 << 30: "3GiB", 1536: "1536"} {
		if got := in.String(); got != want {
			t.Errorf("ByteSize(%d).String(): got %q, want %q", int64(in), got, want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"  a  b\tc ", []string{"a", "b", "c"}, false},
		{"a\r\nb\n", []string{"a", "b"}, false},
		{`a "b c" 'd e'`, []string{"a", "b c", "d e"}, false},
		{`serve --worker-command '/bin/w stdio-server'`, []string{"serve", "--worker-command", "/bin/w stdio-server"}, false},
		{`'a\b'`, []string{`a\b`}, false},
		{`a\ b`, []string{"a b"}, false},
		{`"say \"hi\" \\o/"`, []string{`say "hi" \o/`}, false},
		{`"say \"hi\"" 'it''s'`, []string{`say "hi"`, "its"}, false},
		{`"a\nb"`, []string{`a\nb`}, false},
		{`x"y"z`, []string{"xyz"}, false},
		{`--x='1 2'3`, []string{"--x=1 23"}, false},
		{`""`, []string{""}, false},
		{`a '' b`, []string{"a", "", "b"}, false},
		{"héllo 'wörld ✓'", []string{"héllo", "wörld ✓"}, false},
		{`trailing\`, []string{`trailing\`}, false},
		{`'open`, nil, true},
		{`"open`, nil, true},
		{`"open\"`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitWords(tt.in)
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{
		"PATH=/bin", "MCPGATE_AUTH_ISSUER=https://x", "MCPGATE_AUTH_ISUER=https://x",
		"MCPGATE_CONFIG=a.yaml", "MCPGATE_WORKER_USER=alice", "MCPGATE_WORKER_TOOLSETS=",
		"MCPGATE_WORKER_COMAND=x", "MCPGATE_LISTEN=:1", "MCP_WRITE_SCOPE=w",
	})
	assert.Equal(t, []string{"MCPGATE_AUTH_ISUER", "MCPGATE_LISTEN", "MCPGATE_WORKER_COMAND"}, got)
}

// TestLoadPolicies: auth.policies loads from YAML as a list of rules, and
// the example tiers validate and resolve toolsets to their tools.
func TestLoadPolicies(t *testing.T) {
	const file = `
server:
  public_url: https://mcp.example.com
auth:
  issuer: https://kc.example.com/realms/mcp
  required_scopes: [mcp:use]
  initial_scopes: [mcp:use, mcp:read]
  policies:
    - scope: mcp:read
      toolsets: [listing]
      tools: [query]
    - claim: realm_access.roles
      values: [mcp-admin]
      toolsets: [mutation]
`
	c, err := Loader{Getenv: env(nil)}.Load(writeFile(t, "p.yaml", file), nil)
	require.NoError(t, err)
	require.Len(t, c.Auth.Policies, 2)
	assert.Equal(t, Policy{Scope: "mcp:read", Toolsets: []string{"listing"}, Tools: []string{"query"}}, c.Auth.Policies[0])
	assert.Equal(t, []string{"mcp-admin"}, c.Auth.Policies[1].Values)
	rules, err := c.PolicyRules()
	require.NoError(t, err)
	assert.Contains(t, rules[0].Tools, "list_tables")
	assert.Contains(t, rules[0].Tools, "query")
	assert.NotContains(t, rules[0].Tools, "apply_ddl")
	assert.Contains(t, rules[1].Tools, "apply_ddl")
}

// TestWorkerLimitsKeys: worker.limits is a group of keys one level down,
// from the file and from the environment, and its unknown keys are named.
func TestWorkerLimitsKeys(t *testing.T) {
	c, err := Loader{Getenv: env(map[string]string{"MCPGATE_WORKER_LIMITS_PROCESSES": "64", "MCPGATE_WORKER_LIMITS_ADDRESS_SPACE": "4GiB"})}.Load("", nil)
	require.NoError(t, err)
	assert.Equal(t, 64, c.Worker.Limits.Processes)
	assert.Equal(t, ByteSize(4<<30), c.Worker.Limits.AddressSpace)
	require.NoError(t, c.Validate())

	_, err = Loader{Getenv: env(nil)}.Load(writeFile(t, "bad.yaml", "worker:\n  limits:\n    memroy: 1GiB\n"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown key "worker.limits.memroy" (did you mean "worker.limits.memory"?)`)
	_, err = Loader{Getenv: env(nil)}.Load(writeFile(t, "bad2.yaml", "worker:\n  limits: 3\n"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker.limits must be a mapping")

	c.Worker.Limits = WorkerLimits{AddressSpace: 1 << 20, CPU: -1, Processes: 2, CPUTime: time.Millisecond}
	err = c.Validate()
	require.Error(t, err)
	for _, k := range []string{"worker.limits.address_space", "worker.limits.cpu", "worker.limits.processes", "worker.limits.cpu_time"} {
		assert.Contains(t, err.Error(), k)
	}
}
