package config

import (
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/options"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/worker"
)

// A binding ties a key to the field of a package's options that it sets,
// and to that package's exported default for it. Config holds what the
// file, the environment and the flags said; the package owns the field,
// its default and its validation (Options.Validate): a key is one line
// here, one field in Config and the package's own option.
type binding struct {
	key   string // dotted key, such as limits.max_body_bytes
	field string // Go selector in the options struct, such as DB.MaxPerUser
	def   any    // the package's Default* for it, or nil (no default, or one derived in applyDefaults)
}

// gatewayKeys set gateway.Options.
var gatewayKeys = []binding{
	{"server.read_only", "ReadOnly", nil},
	{"server.local_user", "LocalUser", nil},
	{"server.replica_id", "ReplicaID", nil},
	{"server.allowed_origins", "AllowedOrigins", nil},
	{"worker.safe_tools", "SafeTools", nil},
	{"worker.safe_methods", "SafeMethods", nil},
	{"limits.max_body_bytes", "MaxBodyBytes", gateway.DefaultMaxBodyBytes},
	{"limits.read_timeout", "BodyReadTimeout", gateway.DefaultBodyReadTimeout},
	{"limits.session_idle_timeout", "SessionIdleTimeout", gateway.DefaultSessionIdleTimeout},
	{"limits.worker_start_timeout", "WorkerStartTimeout", gateway.DefaultWorkerStartTimeout},
	{"limits.max_sessions", "MaxSessions", gateway.DefaultMaxSessions},
	{"limits.max_sessions_per_user", "MaxSessionsPerUser", gateway.DefaultMaxSessionsPerUser},
	{"limits.max_sessions_per_worker", "MaxSessionsPerWorker", gateway.DefaultMaxSessionsPerWorker},
	{"limits.max_db_connections", "DB.Max", gateway.DefaultMaxDBConnections},
	{"limits.max_db_connections_per_user", "DB.MaxPerUser", gateway.DefaultMaxDBConnectionsPerUser},
	{"limits.max_stream_lifetime", "MaxStreamLifetime", gateway.DefaultMaxStreamLifetime},
	{"limits.write_timeout", "WriteTimeout", gateway.DefaultWriteTimeout},
	{"limits.drain_min", "DrainMin", gateway.DefaultDrainMin},
	{"limits.max_stream_buffer_bytes", "MaxStreamBufferBytes", gateway.DefaultMaxStreamBufferBytes},
	{"limits.max_session_buffer_bytes", "MaxSessionBufferBytes", gateway.DefaultMaxSessionBufferBytes},
	{"limits.max_user_buffer_bytes", "MaxUserBufferBytes", gateway.DefaultMaxUserBufferBytes},
}

// listenerKeys set gateway.ListenerOptions.
var listenerKeys = []binding{
	{"limits.max_connections", "MaxConnections", gateway.DefaultMaxConnections},
	{"limits.max_connections_per_principal", "MaxConnectionsPerPrincipal", nil}, // a share of max_connections
	{"limits.max_unauthenticated_per_address", "MaxUnauthenticatedPerAddress", gateway.DefaultMaxUnauthenticatedPerAddress},
	{"limits.unauthenticated_idle_timeout", "UnauthenticatedIdleTimeout", gateway.DefaultUnauthenticatedIdleTimeout},
}

// launcherKeys set worker.LauncherOptions.
var launcherKeys = []binding{
	{"server.name", "ServerName", worker.DefaultServerName},
	{"server.title", "ServerTitle", nil},
	{"worker.env", "Env", nil},
	{"worker.dir", "Dir", nil},
	{"worker.toolsets", "Toolsets", nil},
	{"worker.pool_size", "PoolSize", nil}, // 0 is off: its default is preset
	{"worker.identity_on_stdin", "IdentityOnStdin", nil},
	{"limits.worker_stop_grace", "StopGrace", worker.DefaultStopGrace},
	{"limits.max_worker_message_bytes", "MaxMessageBytes", worker.DefaultMaxLineBytes},
}

// databaseKeys set the built-in worker's db.Config (database.path is the
// DSN of SQLite, set by the caller).
var databaseKeys = []binding{
	{"database.driver", "Driver", db.SQLite},
	{"database.dsn", "DSN", nil},
	{"database.set_role", "SetRole", nil},
	{"database.connect_as_user", "ConnectAsUser", nil},
	{"database.user_role_member_of", "UserRoleMemberOf", nil},
	{"database.statement_timeout", "StatementTimeout", db.DefaultStatementTimeout},
	{"database.lock_timeout", "LockTimeout", db.DefaultLockTimeout},
	{"database.max_rows", "MaxRows", db.DefaultMaxRows},
	{"database.checks_timeout", "ChecksTimeout", db.DefaultChecksTimeout},
	{"database.max_transactions", "MaxTransactions", db.DefaultMaxTransactions},
	{"database.idle_release", "IdleRelease", db.DefaultIdleRelease},
	{"database.transaction_idle_timeout", "TransactionIdleTimeout", nil}, // limits.session_idle_timeout
}

// authKeys set auth.Options (auth.hmac_secret_file and
// auth.introspection_client_secret_file name files whose contents become
// HMACSecret and Introspection.ClientSecret).
var authKeys = []binding{
	{"auth.issuer", "Issuer", nil},
	{"auth.authorization_servers", "AuthorizationServers", nil},
	{"auth.required_scopes", "RequiredScopes", nil},
	{"auth.write_scope", "WriteScope", nil},
	{"auth.extra_scopes", "ExtraScopes", nil},
	{"auth.initial_scopes", "InitialScopes", nil},
	{"auth.policies", "Policies", nil},
	{"auth.user_claim", "UserClaim", auth.DefaultUserClaim},
	{"auth.algorithms", "Algorithms", nil}, // auth.DefaultAlgorithms, with HMAC ones beside a secret
	{"auth.hmac_secret_file", "HMACSecret", nil},
	{"auth.require_at_jwt", "RequireATJWT", nil},
	{"auth.leeway", "Leeway", auth.DefaultLeeway},
	{"auth.max_token_bytes", "MaxTokenBytes", auth.DefaultMaxTokenBytes},
	{"auth.token_cache_size", "TokenCacheSize", auth.DefaultTokenCacheSize},
	{"auth.introspection_client_id", "Introspection.ClientID", nil},
	{"auth.introspection_max_cache_ttl", "Introspection.MaxCacheTTL", auth.DefaultIntrospectionMaxCacheTTL},
	{"auth.introspection_max_concurrent", "Introspection.MaxConcurrent", auth.DefaultIntrospectionMaxConcurrent},
	{"auth.introspection_per_address_per_minute", "Introspection.PerAddressPerMinute", auth.DefaultIntrospectionPerAddressPerMinute},
	{"auth.dpop", "DPoP.Mode", auth.DPoPAllowed},
	{"auth.dpop_proof_lifetime", "DPoP.ProofLifetime", auth.DefaultProofLifetime},
	{"auth.dpop_nonce", "DPoP.Nonce", nil},
	{"auth.dpop_nonce_secret_file", "DPoP.NonceSecret", nil},
	{"auth.dpop_nonce_lifetime", "DPoP.NonceLifetime", auth.DefaultNonceLifetime},
	{"auth.dpop_replay_cache_size", "DPoP.ReplayCacheSize", auth.DefaultReplayCacheSize},
	{"server.public_url", "Resource", nil}, // Resource() is built from it
	{"server.title", "ResourceName", nil},
}

// configKeys are the keys no package's options hold: the http.Server
// around the gateway and config's own.
var configKeys = []binding{
	{"server.listen", "", DefaultListen},
	{"server.idle_exit", "", DefaultIdleExit},
	{"limits.read_header_timeout", "", gateway.DefaultReadHeaderTimeout},
	{"limits.idle_timeout", "", gateway.DefaultIdleTimeout},
	{"limits.drain_timeout", "", gateway.DefaultDrainTimeout},
	{"database.path", "", db.DefaultSQLitePath},
	{"audit.max_argument_bytes", "", audit.DefaultMaxArgumentBytes},
	{"worker.sessions", "", nil}, // SharedSessions; its default depends on worker.command
}

// allBindings lists every table, for defaults and tests.
var allBindings = [][]binding{gatewayKeys, listenerKeys, launcherKeys, databaseKeys, authKeys, credentialKeys, configKeys}

// applyBoundDefaults sets every zero key that has a package default.
func (c *Config) applyBoundDefaults() {
	for _, table := range allBindings {
		for _, b := range table {
			if b.def == nil {
				continue
			}
			if f := c.keyValue(b.key); f.IsZero() {
				f.Set(reflect.ValueOf(b.def).Convert(f.Type()))
			}
		}
	}
}

// keyValue is the settable field of c that holds key.
func (c *Config) keyValue(key string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		t := v.Type()
		found := false
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("mapstructure") == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			panic("config: no key " + key)
		}
	}
	return v
}

// optionField is the settable field of the options struct v at a Go
// selector, allocating pointers on the way.
func optionField(v reflect.Value, sel string) reflect.Value {
	for _, name := range strings.Split(sel, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.FieldByName(name)
		if !v.IsValid() {
			panic("config: no option field " + sel)
		}
	}
	return v
}

// bind copies the keys of a table into a new options value.
func bind[O any](c *Config, table []binding) O {
	var o O
	ov := reflect.ValueOf(&o).Elem()
	for _, b := range table {
		src, dst := c.keyValue(b.key), optionField(ov, b.field)
		if src.Type().ConvertibleTo(dst.Type()) {
			dst.Set(src.Convert(dst.Type()))
		} // else the caller maps it: a file's contents, the policies' tools
	}
	return o
}

// report adds the problems of a package's Validate under their keys: each
// field becomes its key, in the message too, where it names another
// field. An error that names no bound field is a bug in the table, and is
// reported under the first key so that it is not lost.
func report(v *validator, table []binding, err error) {
	if err == nil {
		return
	}
	fields := map[string]string{}
	var names []string
	for _, b := range table {
		if b.field != "" {
			fields[b.field] = b.key
			names = append(names, regexp.QuoteMeta(b.field))
		}
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) }) // DB.MaxPerUser before DB.Max
	re := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
	for _, e := range options.Errors(err) {
		field, index, _ := strings.Cut(e.Field, "[")
		key, ok := fields[field]
		if !ok {
			v.add(table[0].key, "%s", e.Error())
			continue
		}
		if index != "" {
			i, rest, _ := strings.Cut(index, "]")
			key += "[" + i + "]" + snakeCase(rest)
		}
		v.add(key, "%s", renameFields(e.Message, re, fields))
	}
	if len(options.Errors(err)) == 0 {
		v.add(table[0].key, "%v", err)
	}
}

// GatewayOptions maps the configuration to the gateway's options: the keys
// of gatewayKeys, the Host checks the listen address implies, and the
// database connection budget where one applies (DBBudget).
func (c *Config) GatewayOptions() gateway.Options {
	o := bind[gateway.Options](c, gatewayKeys)
	o.LoopbackHostCheck = c.Loopback()
	o.AllowedHosts = c.publicHost()
	o.DB, _ = c.DBBudget()
	o.SharedSessions = c.SharedSessions()
	return o
}

// ListenerOptions maps the configuration to the listener's limits; TLS
// follows tls.cert_file.
func (c *Config) ListenerOptions() gateway.ListenerOptions {
	o := bind[gateway.ListenerOptions](c, listenerKeys)
	o.TLS = c.TLSEnabled()
	return o
}

// LauncherOptions maps the configuration to the worker launcher's options.
func (c *Config) LauncherOptions() worker.LauncherOptions {
	return bind[worker.LauncherOptions](c, launcherKeys)
}

// DatabaseConfig maps the configuration to the built-in worker's database
// settings; for SQLite the caller sets DSN to database.path's file.
func (c *Config) DatabaseConfig() db.Config {
	return bind[db.Config](c, databaseKeys)
}

// validateBound reports the packages' own problems with their options,
// under the keys that set them.
func (c *Config) validateBound(v *validator) {
	report(v, gatewayKeys, bind[gateway.Options](c, gatewayKeys).Validate())
	report(v, listenerKeys, bind[gateway.ListenerOptions](c, listenerKeys).Validate())
	report(v, launcherKeys, c.LauncherOptions().Validate())
	report(v, databaseKeys, c.DatabaseConfig().Validate())
	c.validateAuthOptions(v)
	c.validateCredentials(v)
}

// publicHost is the host of server.public_url, which a reverse proxy on
// the same machine forwards as Host to a loopback listener.
func (c *Config) publicHost() []string {
	if c.Server.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(c.Server.PublicURL)
	if err != nil || u.Host == "" {
		return nil
	}
	return []string{u.Host}
}

// quoted matches a Go-quoted string (%q) in a message: a value the
// operator wrote, which is shown as it is.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// renameFields replaces the field names re matches in msg with their keys,
// outside quoted values: a replica id "ReadOnly" is not the key
// server.read_only.
func renameFields(msg string, re *regexp.Regexp, fields map[string]string) string {
	var b strings.Builder
	last := 0
	for _, q := range quoted.FindAllStringIndex(msg, -1) {
		b.WriteString(re.ReplaceAllStringFunc(msg[last:q[0]], func(f string) string { return fields[f] }))
		b.WriteString(msg[q[0]:q[1]])
		last = q[1]
	}
	b.WriteString(re.ReplaceAllStringFunc(msg[last:], func(f string) string { return fields[f] }))
	return b.String()
}

// snakeCase turns a Go selector's tail (".Claim") into a key's (".claim").
func snakeCase(sel string) string {
	var b strings.Builder
	for i, r := range sel {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && sel[i-1] != '.' {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
