// Package credential obtains each user's own credentials for a downstream
// service and hands them to that user's worker alone: a token exchanged
// for the user's verified access token at the issuer (RFC 8693), a
// per-user secret file, or one static secret shared by every user. The
// client's own token never leaves the gateway; what this package obtains
// is never logged, put in an error, an audit event or a metric, nor
// written to persistent storage.
package credential

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/options"
	"github.com/mcpgate/mcpgate/workerproto"
)

// Where a credential comes from (Credential.From).
const (
	// FromTokenExchange exchanges the user's access token at the issuer's
	// token endpoint (RFC 8693) for a token of Credential.Audience.
	FromTokenExchange = "token_exchange"
	// FromFile reads <Dir>/<user id>/<name>, the user's own secret.
	FromFile = "file"
	// FromStatic reads one file, the same for every user.
	FromStatic = "static"
)

// Credential is one credential of a server: where it goes (exactly one of
// Env, EnvFile and Header) and where it comes from (From and its fields).
type Credential struct {
	// Env names the worker's environment variable that holds the
	// credential, set when the worker starts. A worker that holds one
	// is replaced between calls before the credential expires.
	Env string
	// EnvFile names the worker's environment variable that holds the path
	// of a file holding the credential: a memory-backed file open in the
	// worker alone (/proc/self/fd/N), gone when the worker ends.
	EnvFile string
	// Header names the request header a remote server gets the credential
	// in, after Prefix (such as "Bearer "). For remote servers only.
	Header string
	Prefix string

	// From is FromTokenExchange, FromFile or FromStatic.
	From string
	// Audience (token exchange, required) names the client of the realm
	// the exchanged token is for (Keycloak: a client id); Scope (optional)
	// is the space-separated scopes asked for.
	Audience string
	Scope    string
	// Dir (file) holds one directory per user id, each holding a file
	// named like the credential's Env, EnvFile or Header.
	Dir string
	// Path (static) is the one file every user's worker gets.
	Path string
}

// Name is the credential's target name: its Env, EnvFile or Header. It is
// the file's name under a user's directory (FromFile), and how errors and
// logs name the credential.
func (c Credential) Name() string {
	switch {
	case c.Env != "":
		return c.Env
	case c.EnvFile != "":
		return c.EnvFile
	}
	return c.Header
}

// Options are the credentials of one server.
type Options struct {
	// Credentials lists them; empty means none.
	Credentials []Credential
	// Remote says the server is reached over HTTP (a header credential)
	// rather than started as a stdio worker (an env or env_file one).
	Remote bool
}

// Exchanges reports whether any credential comes from token exchange.
func (o Options) Exchanges() bool {
	for _, c := range o.Credentials {
		if c.From == FromTokenExchange {
			return true
		}
	}
	return false
}

// envName is a portable environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// headerName is an RFC 9110 field name (token) that does not start with
// '#': the upstream worker reads its headers as lines where one that
// starts with '#' is a comment (bridge.ParseHeaders), so such a header
// would be dropped unsaid.
var headerName = regexp.MustCompile("^[!$%&'*+.^_`|~0-9A-Za-z-][!#$%&'*+.^_`|~0-9A-Za-z-]*$")

// Validate reports every credential that cannot work, each as an
// *options.Error naming its field (Credentials[i].Env and so on).
func (o Options) Validate() error {
	var p options.Problems
	seen := map[string]bool{}
	for i, c := range o.Credentials {
		f := func(name string) string { return "Credentials[" + strconv.Itoa(i) + "]." + name }
		targets := 0
		for _, t := range []string{c.Env, c.EnvFile, c.Header} {
			if t != "" {
				targets++
			}
		}
		if targets != 1 {
			p.Add(f("Env"), "a credential goes to exactly one place: set one of env, env_file (a stdio worker) or header (a remote server)")
		}
		for field, name := range map[string]string{"Env": c.Env, "EnvFile": c.EnvFile} {
			switch {
			case name == "":
			case o.Remote:
				p.Add(f(field), "%q: a remote server gets its credentials in a header; use header", name)
			case !envName.MatchString(name):
				p.Add(f(field), "%q is not an environment variable name (letters, digits and _, not starting with a digit)", name)
			case workerproto.IsReservedEnv(name):
				p.Add(f(field), "%q is reserved: the gateway sets MCPGATE_WORKER_* to the session's identity", name)
			}
		}
		if c.Header != "" {
			switch {
			case !o.Remote:
				p.Add(f("Header"), "%q: a header credential is for a remote server (url); a stdio worker gets env or env_file", c.Header)
			case !headerName.MatchString(c.Header):
				p.Add(f("Header"), "%q is not an HTTP header name", c.Header)
			}
		}
		if c.Prefix != "" && (c.Header == "" || strings.ContainsAny(c.Prefix, "\r\n\x00")) {
			p.Add(f("Prefix"), "is for a header credential, on one line (such as \"Bearer \")")
		}
		if n := strings.ToLower(c.Name()); n != "" {
			if c.Header != "" {
				n = "header:" + http.CanonicalHeaderKey(c.Header)
			}
			if seen[n] {
				p.Add(f("Env"), "%q is set by an earlier credential too", c.Name())
			}
			seen[n] = true
		}
		switch c.From {
		case FromTokenExchange:
			if c.Audience == "" {
				p.Add(f("Audience"), "token_exchange needs the audience: the client id of the service the token is for")
			}
		case FromFile:
			if !isAbs(c.Dir) {
				p.Add(f("Dir"), "from: file needs dir, an absolute directory holding one directory per user id")
			}
		case FromStatic:
			if !isAbs(c.Path) {
				p.Add(f("Path"), "from: static needs path, the absolute path of the file every user's worker gets")
			}
		default:
			p.Add(f("From"), "%q is not a source; use token_exchange, file or static", c.From)
		}
		if c.From != FromTokenExchange && (c.Audience != "" || c.Scope != "") {
			p.Add(f("Audience"), "audience and scope are for from: token_exchange")
		}
		if c.From != FromFile && c.Dir != "" {
			p.Add(f("Dir"), "is for from: file")
		}
		if c.From != FromStatic && c.Path != "" {
			p.Add(f("Path"), "is for from: static")
		}
	}
	return p.Err("credential")
}

func isAbs(p string) bool { return strings.HasPrefix(p, "/") }
