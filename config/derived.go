package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/tools"
)

// PolicyRules resolves auth.policies to the token checker's rules: each
// rule's toolsets become their tools (built-in worker), joined with its
// tools. An unknown toolset or, for the built-in worker, an unknown tool
// (one worker.toolsets does not serve) is an error; Validate reports each
// one by key.
func (c *Config) PolicyRules() ([]auth.Rule, error) {
	var rules []auth.Rule
	var errs []error
	for i, p := range c.Auth.Policies {
		r := auth.Rule{Scope: p.Scope, Claim: p.Claim, Values: p.Values}
		names, err := c.policyTools(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: auth.policies[%d]: %w", i, err))
		}
		r.Tools = names
		rules = append(rules, r)
	}
	return rules, errors.Join(errs...)
}

// policyTools is the tools one rule grants.
func (c *Config) policyTools(p Policy) ([]string, error) {
	var names []string
	if c.external() {
		if len(p.Toolsets) > 0 {
			return nil, fmt.Errorf("toolsets name built-in toolsets, and worker.command is an external worker; list its tools instead")
		}
		return append(names, p.Tools...), nil
	}
	served, err := tools.ToolNames(c.Worker.Toolsets)
	if err != nil {
		return nil, fmt.Errorf("worker.toolsets: %w", err)
	}
	for _, ts := range p.Toolsets {
		if !slices.Contains(c.Worker.Toolsets, ts) && len(c.Worker.Toolsets) > 0 {
			return nil, fmt.Errorf("toolset %q is not in worker.toolsets (%s), so it grants nothing", ts, strings.Join(c.Worker.Toolsets, ", "))
		}
		ns, err := tools.ToolNames([]string{ts})
		if err != nil {
			return nil, err
		}
		names = append(names, ns...)
	}
	for _, t := range p.Tools {
		if !slices.Contains(served, t) {
			return nil, fmt.Errorf("tool %q is not a tool of the built-in worker's toolsets (%s)", t, strings.Join(served, ", "))
		}
		names = append(names, t)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Authenticated reports whether bearer tokens are checked (auth.issuer set).
func (c *Config) Authenticated() bool { return c.Auth.Issuer != "" }

// TLSEnabled reports whether the gateway serves HTTPS.
func (c *Config) TLSEnabled() bool { return c.TLS.CertFile != "" || c.TLS.KeyFile != "" }

// Resource is the canonical resource URI of the /mcp endpoint (or, for a
// configuration of ServerConfigs, of its /mcp/<name>): the value of
// resource in the RFC 9728 metadata and the audience tokens must carry
// (RFC 8707). It is server.public_url + MountPath(); without a public URL
// (localhost mode) it is built from the listen address, with "localhost"
// standing in for an empty or unspecified host.
func (c *Config) Resource() string {
	if c.Server.PublicURL != "" {
		return strings.TrimRight(c.Server.PublicURL, "/") + c.MountPath()
	}
	scheme := "http"
	if c.TLSEnabled() {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(c.TCPListen())
	if err != nil {
		return scheme + "://" + cmp.Or(c.TCPListen(), "localhost") + c.MountPath()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return (&url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port), Path: c.MountPath()}).String()
}

// headerSlack is the room MaxHeaderBytes leaves beside the bearer token for
// the rest of a request's head (Host, Accept, MCP headers, cookies a browser
// adds).
const headerSlack = 64 << 10

// minHeaderBytes is the least MaxHeaderBytes: a token several times over the
// default auth.max_token_bytes still reaches the token check, and gets a
// 401 invalid_token that names the limit rather than a bare 431.
const minHeaderBytes = 256 << 10

// MaxHeaderBytes is the bound on a request's head, derived from
// auth.max_token_bytes so the two agree: a token over the token limit is
// read whole and refused with 401 invalid_token naming the limit; only a
// head larger than this (max_token_bytes + 64 KiB, at least 256 KiB) gets
// net/http's bare 431.
func (c *Config) MaxHeaderBytes() int {
	return max(minHeaderBytes, int(c.Auth.MaxTokenBytes)+headerSlack)
}

// Loopback reports whether server.listen binds a loopback address only
// (auth.IsLoopbackHost: localhost, 127.0.0.0/8 or ::1). An empty host binds every interface and
// is not loopback.
func (c *Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.TCPListen())
	if err != nil {
		return false
	}
	return auth.IsLoopbackHost(host)
}

// originHost reduces an allowed_origins entry to its host[:port].
func originHost(entry string) (string, error) {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return "", fmt.Errorf("is empty")
	}
	if strings.Contains(entry, "://") {
		u, err := url.Parse(entry)
		if err != nil {
			return "", fmt.Errorf("is not a URL")
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("has scheme %q; an origin is http or https", u.Scheme)
		}
		if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return "", fmt.Errorf("is not an origin; give scheme://host[:port] with no path")
		}
		return strings.ToLower(u.Host), nil
	}
	if strings.ContainsAny(entry, "/?#@ \t") {
		return "", fmt.Errorf("is not a host; give host[:port] or scheme://host[:port]")
	}
	return strings.ToLower(entry), nil
}

// HMACSecret reads the shared secret named by auth.hmac_secret_file. One
// trailing newline (as editors and `echo` leave) is dropped. The secret is
// never part of an error.
func (c *Config) HMACSecret() ([]byte, error) {
	return secretFile("auth.hmac_secret_file", c.Auth.HMACSecretFile, readSecret)
}

// IntrospectionSecret reads the client secret named by
// auth.introspection_client_secret_file, likewise.
func (c *Config) IntrospectionSecret() ([]byte, error) {
	return secretFile("auth.introspection_client_secret_file", c.Auth.IntrospectionClientSecretFile, readClientSecret)
}

// DPoPNonceSecret reads the secret named by auth.dpop_nonce_secret_file,
// likewise (at least 32 bytes).
func (c *Config) DPoPNonceSecret() ([]byte, error) {
	return secretFile("auth.dpop_nonce_secret_file", c.Auth.DPoPNonceSecretFile, readSecret)
}

// secretFile reads the file a key names with read, its errors naming the
// key.
func secretFile(key, path string, read func(string) ([]byte, error)) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("config: %s is not set", key)
	}
	b, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", key, err)
	}
	return b, nil
}

// readClientSecret reads a client secret file: any length, not empty.
func readClientSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = trimNewline(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty; put the client's secret in it", path)
	}
	return b, nil
}

// readSecret reads a shared secret file; its errors name the file and the
// length, never the content.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = trimNewline(b)
	// Validate reports this under auth.hmac_secret_file from
	// auth.Options.Validate; here it keeps a short secret from use.
	if len(b) < auth.MinHMACSecret {
		return nil, fmt.Errorf("%s holds %d bytes; an HMAC secret needs at least %d", path, len(b), auth.MinHMACSecret)
	}
	return b, nil
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// LogLevel returns log.level as a slog level (info when unrecognised;
// Validate reports that case).
func (c *Config) LogLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.Log.Level)); err != nil {
		return slog.LevelInfo
	}
	return l
}
