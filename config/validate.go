package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpgate/mcpgate/auth"
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
	c.validateBound(v)
	c.validateLimits(v)
	c.validateWorkerLimits(v)
	c.validateWorker(v)
	c.validateSandbox(v)
	c.validateDatabase(v)
	c.validateAuth(v)
	c.validateTLS(v)
	c.validateIssuerCA(v)
	c.validateLog(v)
	c.validateAudit(v)
	c.validateMetrics(v)
	c.validateTracing(v)
	c.validateWeb(v)
	c.validateServers(v, slices.Clone(v.problems))
	return errors.Join(v.problems...)
}

func (c *Config) validateServer(v *validator) {
	s := c.Server
	c.validateListen(v)
	listen := c.TCPListen()
	host, port, err := net.SplitHostPort(listen)
	if listen == "" {
		// A socket only: no network address to check.
	} else if err != nil {
		v.add("server.listen", "%q is not host:port; use e.g. %s, or 0.0.0.0:8443 for every interface", listen, DefaultListen)
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
			listen, strings.Join(missing, " and "))
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
	c.validateClientCerts(v)
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
	if c.TCPListen() == l {
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
