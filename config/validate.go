package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/gateway"
)

// Problem is one thing wrong with a configuration: the key and what to do.
// Validate joins every Problem it finds with errors.Join.
type Problem struct {
	Key     string // dotted key, such as auth.issuer
	Message string // what is wrong and how to fix it; never a secret
}

// Error formats the problem as "config: <key>: <message>".
func (p *Problem) Error() string { return "config: " + p.Key + ": " + p.Message }

// Problems returns the Problems joined in an error from Validate.
func Problems(err error) []*Problem {
	var out []*Problem
	var walk func(error)
	walk = func(err error) {
		if p, ok := err.(*Problem); ok {
			out = append(out, p)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// validator collects problems.
type validator struct{ problems []error }

func (v *validator) add(key, format string, args ...any) {
	v.problems = append(v.problems, &Problem{Key: key, Message: fmt.Sprintf(format, args...)})
}

// Validate checks the configuration and returns every problem at once
// (errors.Join of *Problem), or nil. It reads the files the configuration
// names (to check they are readable) but never reports their contents.
//
// The decisions it enforces: an issuer and a public URL are https, or http
// only on a loopback host (a test issuer on 127.0.0.1); a non-loopback listen
// needs TLS and auth unless server.insecure; a scope is either required,
// write or extra, never two of them.
//
// Zero values stand for the defaults, as in Load, so Config{} is valid.
func (c *Config) Validate() error {
	eff := *c
	eff.applyDefaults()
	c = &eff
	v := &validator{}
	c.validateServer(v)
	c.validateLimits(v)
	c.validateWorkerLimits(v)
	c.validateWorker(v)
	c.validateDatabase(v)
	c.validateAuth(v)
	c.validateTLS(v)
	c.validateIssuerCA(v)
	c.validateLog(v)
	c.validateAudit(v)
	c.validateMetrics(v)
	c.validateTracing(v)
	return errors.Join(v.problems...)
}

func (c *Config) validateServer(v *validator) {
	s := c.Server
	host, port, err := net.SplitHostPort(s.Listen)
	if err != nil {
		v.add("server.listen", "%q is not host:port; use e.g. %s, or 0.0.0.0:8443 for every interface", s.Listen, DefaultListen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.add("server.listen", "port %q is not a number from 0 to 65535", port)
	} else if !auth.IsLoopbackHost(host) && !s.Insecure && (!c.TLSEnabled() || !c.Authenticated()) {
		var missing []string
		if !c.TLSEnabled() {
			missing = append(missing, "tls.cert_file and tls.key_file")
		}
		if !c.Authenticated() {
			missing = append(missing, "auth.issuer")
		}
		v.add("server.listen", "%q is not a loopback address, and serving the network needs TLS and authentication: set %s, bind to 127.0.0.1 behind a proxy, or set server.insecure: true (never in production)",
			s.Listen, strings.Join(missing, " and "))
	}

	if s.PublicURL == "" {
		if c.Authenticated() {
			v.add("server.public_url", "is required with auth.issuer: the canonical resource URI (public_url + /mcp) is the audience tokens must carry; set it to the origin clients use, e.g. https://mcp.example.com")
		}
	} else if err := auth.CheckURL(s.PublicURL); err != nil && (c.Authenticated() || !errors.Is(err, auth.ErrNotHTTPS)) {
		// Plain http off loopback is the operator's business only while
		// no token travels to this URL.
		v.add("server.public_url", "%v", err)
	} else if strings.HasSuffix(strings.TrimRight(s.PublicURL, "/"), "/mcp") {
		v.add("server.public_url", "%q ends in /mcp; give the origin (and any proxy path prefix) only, the resource URI adds /mcp", s.PublicURL)
	} else if err := auth.CheckResource(c.Resource()); err != nil && c.Authenticated() {
		// auth.New would refuse the resource at start-up; say it now.
		v.add("server.public_url", "gives the resource URI %v", err)
	}

	for i, o := range s.AllowedOrigins {
		if _, err := originHost(o); err != nil {
			v.add(fmt.Sprintf("server.allowed_origins[%d]", i), "%q %v", o, err)
		}
	}
	if hasControl(s.Name) {
		v.add("server.name", "must not contain control characters")
	}
	if hasControl(s.Title) {
		v.add("server.title", "must not contain control characters")
	}
	if err := gateway.CheckReplicaID(s.ReplicaID); err != nil {
		v.add("server.replica_id", "%q is not a DNS label: use 1 to 63 of a-z 0-9 -, starting and ending with a letter or digit (a host or pod name such as mcpgate-0)", s.ReplicaID)
	}
	if !c.Authenticated() && s.LocalUser != "" {
		if msg := checkUserID(s.LocalUser); msg != "" {
			v.add("server.local_user", "%s", msg)
		}
	}
}

// checkUserID returns what makes s unusable as a user id, or "".
func checkUserID(s string) string {
	switch {
	case s == "":
		return "is empty; name the user sessions run as in localhost mode"
	case len(s) > 255:
		return "is longer than 255 bytes"
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Sprintf("%q contains white space or control characters", s)
	}
	return ""
}

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

func (c *Config) validateLimits(v *validator) {
	l := c.Limits
	for _, d := range []struct {
		key string
		val time.Duration
	}{
		{"limits.read_header_timeout", l.ReadHeaderTimeout},
		{"limits.read_timeout", l.ReadTimeout},
		{"limits.idle_timeout", l.IdleTimeout},
		{"limits.session_idle_timeout", l.SessionIdleTimeout},
		{"limits.worker_start_timeout", l.WorkerStartTimeout},
		{"limits.worker_stop_grace", l.WorkerStopGrace},
		{"limits.write_timeout", l.WriteTimeout},
		{"limits.unauthenticated_idle_timeout", l.UnauthenticatedIdleTimeout},
		{"limits.drain_timeout", l.DrainTimeout},
	} {
		if d.val < 0 {
			v.add(d.key, "%v is negative; use a positive duration such as 30s (0 or no key means the default)", d.val)
		}
	}
	for _, n := range []struct {
		key string
		val int
	}{
		{"limits.max_connections", l.MaxConnections},
		{"limits.max_sessions", l.MaxSessions},
		{"limits.max_sessions_per_user", l.MaxSessionsPerUser},
		{"limits.max_unauthenticated_per_address", l.MaxUnauthenticatedPerAddress},
	} {
		if n.val < 0 {
			v.add(n.key, "%d is negative; use a positive number (0 or no key means the default)", n.val)
		}
	}
	if l.MaxBodyBytes < 0 || l.MaxBodyBytes > 1<<30 {
		v.add("limits.max_body_bytes", "%d is outside 1 byte to 1GiB; use a size such as 8MiB (0 or no key means the default)", int64(l.MaxBodyBytes))
	}
	if l.MaxWorkerMessageBytes < 0 || l.MaxWorkerMessageBytes > 1<<30 || l.MaxWorkerMessageBytes > 0 && l.MaxWorkerMessageBytes < 1<<20 {
		v.add("limits.max_worker_message_bytes", "%d is outside 1MiB to 1GiB; use a size such as 64MiB, above the worker's largest answer (0 or no key means the default)", int64(l.MaxWorkerMessageBytes))
	}
	if l.ReadHeaderTimeout > 0 && l.ReadTimeout > 0 && l.ReadHeaderTimeout > l.ReadTimeout {
		v.add("limits.read_header_timeout", "%v is longer than limits.read_timeout %v, which bounds reading the body; lower it", l.ReadHeaderTimeout, l.ReadTimeout)
	}
	bufs := []struct {
		key string
		val ByteSize
	}{
		{"limits.max_stream_buffer_bytes", l.MaxStreamBufferBytes},
		{"limits.max_session_buffer_bytes", l.MaxSessionBufferBytes},
		{"limits.max_user_buffer_bytes", l.MaxUserBufferBytes},
	}
	for i, b := range bufs {
		switch {
		case b.val < 0 || b.val > 1<<40:
			v.add(b.key, "%d is outside 1 byte to 1TiB; use a size such as 64MiB (0 or no key means the default)", int64(b.val))
		case i > 0 && b.val > 0 && bufs[i-1].val > b.val:
			v.add(bufs[i-1].key, "%d is more than %s %d; a smaller share cannot hold more than the larger one", int64(bufs[i-1].val), b.key, int64(b.val))
		}
	}
	if l.MaxSessionsPerUser > 0 && l.MaxSessions > 0 && l.MaxSessionsPerUser > l.MaxSessions {
		v.add("limits.max_sessions_per_user", "%d is more than limits.max_sessions %d; lower it or raise max_sessions", l.MaxSessionsPerUser, l.MaxSessions)
	}
}

func (c *Config) validateWorker(v *validator) {
	w := c.Worker
	if len(w.Command) > 0 {
		switch name := w.Command[0]; {
		case strings.TrimSpace(name) == "":
			v.add("worker.command", "the program name (first word) is empty")
		case strings.ContainsRune(name, filepath.Separator):
			if msg := checkExecutable(name); msg != "" {
				v.add("worker.command", "%s", msg)
			}
		default:
			if _, err := exec.LookPath(name); err != nil {
				v.add("worker.command", "%q is not found in PATH; give its absolute path", name)
			}
		}
	} else {
		if len(w.SafeTools) > 0 {
			v.add("worker.safe_tools", "applies to an external worker.command only; the built-in toolsets vouch for their own read-only tools, so remove it")
		}
		if len(w.SafeMethods) > 0 {
			v.add("worker.safe_methods", "applies to an external worker.command only; the built-in worker serves tools alone, so remove it")
		}
	}
	for i, e := range w.Env {
		name, _, ok := strings.Cut(e, "=")
		key := fmt.Sprintf("worker.env[%d]", i)
		switch {
		case !ok || !validEnvName(name):
			v.add(key, "is not NAME=value with NAME made of letters, digits and _ (the value is not shown)")
		case strings.HasPrefix(name, "MCPGATE_WORKER_"):
			v.add(key, "%s is reserved: the gateway sets MCPGATE_WORKER_* to the session's identity, which configuration may not override", name)
		}
	}
	if w.Dir != "" {
		if fi, err := os.Stat(w.Dir); err != nil {
			v.add("worker.dir", "%q: %v; create it or fix the path", w.Dir, errors.Unwrap(err))
		} else if !fi.IsDir() {
			v.add("worker.dir", "%q is not a directory", w.Dir)
		}
	}
	checkNames(v, "worker.toolsets", w.Toolsets)
	checkNames(v, "worker.safe_tools", w.SafeTools)
	checkNames(v, "worker.safe_methods", w.SafeMethods)
	for _, m := range w.SafeMethods {
		switch {
		case m == "tools/call" || m == "tools/list":
			v.add("worker.safe_methods", "%q is decided per tool; list read-only tools in worker.safe_tools instead", m)
		case m == "initialize" || strings.HasPrefix(m, "notifications/"):
			v.add("worker.safe_methods", "%q is not a request a read-only session is refused; remove it", m)
		}
	}
}

// checkExecutable reports what stops path from being run, or "".
func checkExecutable(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Sprintf("%q: %v", path, errors.Unwrap(err))
	case fi.IsDir():
		return fmt.Sprintf("%q is a directory, not a program", path)
	case fi.Mode()&0o111 == 0:
		return fmt.Sprintf("%q is not executable (chmod +x)", path)
	}
	return ""
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'))
	}) < 0
}

// checkNames reports empty, oddly spelled or repeated tool and toolset names.
func checkNames(v *validator, key string, names []string) {
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == "" || strings.IndexFunc(n, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			v.add(key, "%q is not a name (no spaces or control characters)", n)
		case seen[n]:
			v.add(key, "%q is listed twice", n)
		}
		seen[n] = true
	}
}

func (c *Config) validateDatabase(v *validator) {
	d := c.Database
	switch d.Driver {
	case "sqlite":
		if d.DSN != "" {
			v.add("database.dsn", "is set but database.driver is sqlite; set driver: postgres or remove the dsn")
		}
		if d.SetRole {
			v.add("database.set_role", "needs database.driver: postgres; SQLite has no roles")
		}
		if d.ConnectAsUser {
			v.add("database.connect_as_user", "needs database.driver: postgres; SQLite has no roles")
		}
	case "postgres":
		if d.DSN == "" {
			v.add("database.dsn", "is required with driver postgres; e.g. postgres://mcpgate@db.example.com/mcp?sslmode=verify-full (or set %s)", EnvName("database.dsn"))
		} else if !plausibleDSN(d.DSN) {
			v.add("database.dsn", "is neither a postgres:// URL nor key=value pairs (its value is not shown)")
		}
	default:
		v.add("database.driver", "%q is not a driver; use sqlite or postgres", d.Driver)
	}
	if d.SetRole && d.ConnectAsUser {
		v.add("database.connect_as_user", "and database.set_role are exclusive: a worker logged in as its user has no other role to set; keep connect_as_user")
	}
	if d.LockTimeout < 0 {
		v.add("database.lock_timeout", "%v is negative; use a duration such as 5s", d.LockTimeout)
	}
	if d.MaxRows < 0 {
		v.add("database.max_rows", "%d is negative; use a row count such as 500", d.MaxRows)
	}
	if d.StatementTimeout < 0 {
		v.add("database.statement_timeout", "%v is negative; use a duration such as 30s", d.StatementTimeout)
	}
	if d.ChecksTimeout < 0 {
		v.add("database.checks_timeout", "%v is negative; use a duration such as 2m", d.ChecksTimeout)
	}
	if d.MaxTransactions < 0 {
		v.add("database.max_transactions", "%d is negative; use a handle count such as 16", d.MaxTransactions)
	}
	if d.TransactionIdleTimeout < 0 {
		v.add("database.transaction_idle_timeout", "%v is negative; use a duration such as 30m", d.TransactionIdleTimeout)
	}
}

// plausibleDSN accepts the two forms pgx parses: a URL and key=value pairs.
func plausibleDSN(dsn string) bool {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		_, err := url.Parse(dsn)
		return err == nil
	}
	return strings.Contains(dsn, "=")
}

func (c *Config) validateAuth(v *validator) {
	a := c.Auth
	if !c.Authenticated() {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"auth.authorization_servers", len(a.AuthorizationServers) > 0},
			{"auth.required_scopes", len(a.RequiredScopes) > 0},
			{"auth.write_scope", a.WriteScope != ""},
			{"auth.extra_scopes", len(a.ExtraScopes) > 0},
			{"auth.hmac_secret_file", a.HMACSecretFile != ""},
			{"auth.policies", len(a.Policies) > 0},
			{"auth.initial_scopes", len(a.InitialScopes) > 0},
			{"auth.introspection", a.Introspection != "" && a.Introspection != IntrospectionOff},
			{"auth.introspection_client_id", a.IntrospectionClientID != ""},
			{"auth.introspection_client_secret_file", a.IntrospectionClientSecretFile != ""},
		} {
			if k.set {
				v.add(k.key, "is set but auth.issuer is empty, so tokens are not checked at all; set auth.issuer or remove %s", k.key)
			}
		}
		return
	}

	if err := auth.CheckURL(a.Issuer); err != nil {
		v.add("auth.issuer", "%v", err)
	}
	for i, s := range a.AuthorizationServers {
		if s == a.Issuer {
			continue // reported as auth.issuer, once
		}
		if err := auth.CheckURL(s); err != nil {
			v.add(fmt.Sprintf("auth.authorization_servers[%d]", i), "%v", err)
		}
	}

	checkScopes(v, "auth.required_scopes", a.RequiredScopes)
	checkScopes(v, "auth.extra_scopes", a.ExtraScopes)
	if a.WriteScope != "" {
		checkScopes(v, "auth.write_scope", []string{a.WriteScope})
		if slices.Contains(a.RequiredScopes, a.WriteScope) {
			v.add("auth.write_scope", "%q is also in auth.required_scopes, so no session could ever be read-only; remove it from required_scopes", a.WriteScope)
		}
		if slices.Contains(a.ExtraScopes, a.WriteScope) {
			v.add("auth.extra_scopes", "%q is the auth.write_scope, which is advertised already; remove it from extra_scopes", a.WriteScope)
		}
	}
	for _, s := range a.ExtraScopes {
		if slices.Contains(a.RequiredScopes, s) {
			v.add("auth.extra_scopes", "%q is also in auth.required_scopes, which are advertised already; remove it from extra_scopes", s)
		}
	}

	c.validatePolicies(v)

	if strings.TrimSpace(a.UserClaim) == "" {
		v.add("auth.user_claim", "is empty; name the claim holding the user id, e.g. sub or preferred_username")
	}

	hasHMAC := false
	for _, alg := range a.Algorithms {
		hasHMAC = hasHMAC || slices.Contains(auth.HMACAlgorithms(), alg)
		switch err := auth.CheckAlgorithm(alg, a.HMACSecretFile != ""); {
		case errors.Is(err, auth.ErrNeedsHMACSecret):
			v.add("auth.algorithms", "%s needs a shared secret in auth.hmac_secret_file; without one an attacker could sign with a public key, so remove it or set the file", alg)
		case err != nil:
			v.add("auth.algorithms", "%v; remove it", err)
		}
	}
	if a.HMACSecretFile != "" {
		if !hasHMAC {
			v.add("auth.hmac_secret_file", "is set but auth.algorithms lists no HS256, HS384 or HS512; add the one your issuer signs with (or remove auth.algorithms: the default then includes them)")
		}
		if _, err := readSecret(a.HMACSecretFile); err != nil {
			v.add("auth.hmac_secret_file", "%v", err)
		}
	}

	if a.Leeway < 0 || a.Leeway > 5*time.Minute {
		v.add("auth.leeway", "%v is outside 0 to 5m; a clock skew allowance that long accepts tokens before their time", a.Leeway)
	}
	if a.MaxTokenBytes < 0 || (a.MaxTokenBytes > 0 && a.MaxTokenBytes < 1<<10) || a.MaxTokenBytes > 1<<20 {
		v.add("auth.max_token_bytes", "%d is outside 1KiB to 1MiB; use a size such as 16KiB", int64(a.MaxTokenBytes))
	}
	if a.TokenCacheSize < -1 || a.TokenCacheSize > 1_000_000 {
		v.add("auth.token_cache_size", "%d is outside -1 (off) to 1000000", a.TokenCacheSize)
	}
	c.validateIntrospection(v)
}

func (c *Config) validateIntrospection(v *validator) {
	a := c.Auth
	switch a.Introspection {
	case "", IntrospectionOff:
		for _, k := range []struct {
			key string
			set bool
		}{
			{"auth.introspection_client_id", a.IntrospectionClientID != ""},
			{"auth.introspection_client_secret_file", a.IntrospectionClientSecretFile != ""},
		} {
			if k.set {
				v.add(k.key, "is set but auth.introspection is off; set auth.introspection to opaque or all, or remove %s", k.key)
			}
		}
	case IntrospectionOpaque, IntrospectionAll:
		if a.IntrospectionClientID == "" {
			v.add("auth.introspection_client_id", "is required with auth.introspection %s: the client this gateway authenticates as at the issuer's introspection endpoint", a.Introspection)
		}
		if a.IntrospectionClientSecretFile == "" {
			v.add("auth.introspection_client_secret_file", "is required with auth.introspection %s: a file holding that client's secret", a.Introspection)
		} else if _, err := readClientSecret(a.IntrospectionClientSecretFile); err != nil {
			v.add("auth.introspection_client_secret_file", "%v", err)
		}
	default:
		v.add("auth.introspection", "%q is not a mode; use off, opaque or all", a.Introspection)
	}
	if ttl := a.IntrospectionMaxCacheTTL; (ttl != 0 && ttl < time.Second) || ttl > time.Hour {
		v.add("auth.introspection_max_cache_ttl", "%v is outside 1s to 1h; it is how long a revoked token may keep working", a.IntrospectionMaxCacheTTL)
	}
	if a.IntrospectionMaxConcurrent < 0 || a.IntrospectionMaxConcurrent > 1024 {
		v.add("auth.introspection_max_concurrent", "%d is outside 1 to 1024", a.IntrospectionMaxConcurrent)
	}
}

// validatePolicies reports every problem of auth.policies and
// auth.initial_scopes, by key.
func (c *Config) validatePolicies(v *validator) {
	a := c.Auth
	if len(a.Policies) > 0 && a.WriteScope != "" {
		v.add("auth.write_scope", "is set together with auth.policies; only one may decide what a token reaches: express it as a rule (scope: %s, with the tools it grants)", a.WriteScope)
	}
	advertised := slices.Concat(a.RequiredScopes, []string{a.WriteScope}, a.ExtraScopes)
	for i, p := range a.Policies {
		key := fmt.Sprintf("auth.policies[%d]", i)
		switch {
		case (p.Scope == "") == (p.Claim == ""):
			v.add(key, "names who it applies to with exactly one of scope and claim")
		case p.Scope != "":
			checkScopes(v, key+".scope", []string{p.Scope})
			advertised = append(advertised, p.Scope)
			if len(p.Values) > 0 {
				v.add(key+".values", "go with claim, not with scope; remove them")
			}
		default:
			if err := auth.CheckClaimPath(p.Claim); err != nil {
				v.add(key+".claim", "%v", err)
			}
			if len(p.Values) == 0 || slices.Contains(p.Values, "") {
				v.add(key+".values", "must list the roles or groups the rule applies to")
			}
		}
		checkNames(v, key+".toolsets", p.Toolsets)
		checkNames(v, key+".tools", p.Tools)
		if len(p.Toolsets) == 0 && len(p.Tools) == 0 {
			v.add(key, "grants nothing: list toolsets or tools")
			continue
		}
		if _, err := c.policyTools(p); err != nil {
			v.add(key, "%v", err)
		}
	}
	checkScopes(v, "auth.initial_scopes", a.InitialScopes)
	for _, s := range a.InitialScopes {
		if !slices.Contains(advertised, s) {
			v.add("auth.initial_scopes", "%q is not advertised: list only required, policy or extra scopes", s)
		}
	}
}

// checkScopes reports each scope that is not an RFC 6749 scope token
// (auth.CheckScope).
func checkScopes(v *validator, key string, scopes []string) {
	for _, s := range scopes {
		if err := auth.CheckScope(s); err != nil {
			v.add(key, "%v", err)
		}
	}
}

func (c *Config) validateIssuerCA(v *validator) {
	p := c.Auth.IssuerCAFile
	if p == "" {
		return
	}
	if c.Auth.Issuer == "" {
		v.add("auth.issuer_ca_file", "is set but auth.issuer is empty; set the issuer or remove the file")
	}
	if msg := checkReadable(p); msg != "" {
		v.add("auth.issuer_ca_file", "%s; give a PEM file of the CA that signed the issuer's certificate", msg)
	}
}

func (c *Config) validateTLS(v *validator) {
	t := c.TLS
	switch {
	case t.CertFile == "" && t.KeyFile != "":
		v.add("tls.cert_file", "is empty but tls.key_file is set; give both files or neither")
	case t.CertFile != "" && t.KeyFile == "":
		v.add("tls.key_file", "is empty but tls.cert_file is set; give both files or neither")
	}
	for _, f := range []struct{ key, path string }{{"tls.cert_file", t.CertFile}, {"tls.key_file", t.KeyFile}} {
		if f.path == "" {
			continue
		}
		if msg := checkReadable(f.path); msg != "" {
			v.add(f.key, "%s; `mcpgate certs` writes a development certificate to certs/", msg)
		}
	}
}

// checkReadable reports what stops the file at path from being read, or "".
// It opens the file but reads nothing.
func checkReadable(path string) string {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return fmt.Sprintf("%q: %v", path, pe.Err)
		}
		return fmt.Sprintf("%q: %v", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return fmt.Sprintf("%q is a directory, not a file", path)
	}
	return ""
}

func (c *Config) validateLog(v *validator) {
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		v.add("log.level", "%q is not a level; use debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		v.add("log.format", "%q is not a format; use text or json", c.Log.Format)
	}
}

func (c *Config) validateAudit(v *validator) {
	a := c.Audit
	if a.Path != "" {
		if hasControl(a.Path) {
			v.add("audit.path", "must not contain control characters")
		} else if fi, err := os.Stat(filepath.Dir(a.Path)); err != nil || !fi.IsDir() {
			v.add("audit.path", "the directory of %q does not exist; create it or choose another path", a.Path)
		} else if fi, err := os.Stat(a.Path); err == nil && fi.IsDir() {
			v.add("audit.path", "%q is a directory, not a file", a.Path)
		}
	}
	if a.MaxArgumentBytes < 16 || a.MaxArgumentBytes > 64<<10 {
		v.add("audit.max_argument_bytes", "%d is out of range; use 16 bytes to 64KiB", int64(a.MaxArgumentBytes))
	}
	for _, n := range a.RedactArguments {
		if n == "" || hasControl(n) {
			v.add("audit.redact_arguments", "%q is not an argument name", n)
		}
	}
}

func (c *Config) validateMetrics(v *validator) {
	l := c.Metrics.Listen
	if l == MetricsOff {
		return
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil || port == "" {
		v.add("metrics.listen", "%q is not host:port (such as 127.0.0.1:9464), or %q to disable", l, MetricsOff)
		return
	}
	if host == "" {
		v.add("metrics.listen", "%q listens on every interface; name the address (127.0.0.1:9464, or a private one Prometheus reaches)", l)
	}
	if c.Server.Listen == l {
		v.add("metrics.listen", "%q is server.listen: the metrics need a listener of their own", l)
	}
}

func (c *Config) validateTracing(v *validator) {
	e := c.Tracing.OTLPEndpoint
	if e == "" {
		return
	}
	u, err := url.Parse(e)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		v.add("tracing.otlp_endpoint", "%q is not an http(s) URL such as http://127.0.0.1:4318", e)
		return
	}
	if u.User != nil {
		v.add("tracing.otlp_endpoint", "must not carry user info; give credentials with OTEL_EXPORTER_OTLP_HEADERS")
	}
}

func (c *Config) validateWorkerLimits(v *validator) {
	l := c.Worker.Limits
	if l.AddressSpace < 0 || (l.AddressSpace > 0 && l.AddressSpace < 64<<20) {
		v.add("worker.limits.address_space", "%d is below 64MiB, too little for a worker to start; use a size such as 4GiB (0 or no key means no limit)", int64(l.AddressSpace))
	}
	if l.Memory < 0 || (l.Memory > 0 && l.Memory < 16<<20) {
		v.add("worker.limits.memory", "%d is below 16MiB, too little for a worker to start; use a size such as 512MiB (0 or no key means no limit)", int64(l.Memory))
	}
	if l.CPUTime < 0 || (l.CPUTime > 0 && l.CPUTime < time.Second) {
		v.add("worker.limits.cpu_time", "%v is below 1s, the unit of RLIMIT_CPU; use a duration such as 10m (0 or no key means no limit)", l.CPUTime)
	}
	if l.OpenFiles < 0 || (l.OpenFiles > 0 && l.OpenFiles < 16) {
		v.add("worker.limits.open_files", "%d is below 16; a worker needs its pipes, its database and its libraries (0 or no key means no limit)", l.OpenFiles)
	}
	if l.CPU < 0 || (l.CPU > 0 && l.CPU < 0.01) || l.CPU > 4096 {
		v.add("worker.limits.cpu", "%v is outside 0.01 to 4096 cores; use a number of cores such as 0.5 or 2 (0 or no key means no limit)", l.CPU)
	}
	if l.Processes < 0 || (l.Processes > 0 && l.Processes < 8) {
		v.add("worker.limits.processes", "%d is below 8; a worker's runtime needs a few threads (a Go worker about 8) (0 or no key means no limit)", l.Processes)
	}
}
