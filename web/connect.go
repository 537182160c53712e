package web

import (
	"bytes"
	"errors"
	"html/template"
	"log/slog"
	"net/http"

	"github.com/mcpgate/mcpgate/install"
)

// Options say what the connect page shows. Every value may come from the
// configuration and is escaped where it is written.
type Options struct {
	// Title and Name are the server's serverInfo.title and name.
	Title, Name string
	// URL is the MCP endpoint clients connect to, https://HOST/mcp.
	URL string
	// AuthorizationServers and MetadataURL are what the RFC 9728
	// metadata publishes; empty without authentication.
	AuthorizationServers []string
	MetadataURL          string
	// Scopes are the advertised scopes and what each grants.
	Scopes []Scope
	// PublicTools shows each scope's tool names (Scope.Tools); otherwise
	// only its toolsets.
	PublicTools bool
	// ReadOnly says every session is read-only (server.read_only).
	ReadOnly bool
	// Command is the mcpgate executable a bridge entry names; default
	// /usr/local/bin/mcpgate (the page says to adjust it).
	Command string
	// Logger receives rendering errors; default slog.Default().
	Logger *slog.Logger
}

// Scope is one scope and what a token holding it gets.
type Scope struct {
	Name string
	// Grants says in a few words what holding the scope means
	// ("required on every token", "read-write").
	Grants string
	// Toolsets and Tools name what it grants; Tools is shown only with
	// Options.PublicTools.
	Toolsets []string
	Tools    []string
}

// clientView is one MCP client's way to connect.
type clientView struct {
	Name, Title string
	Install     string       // the mcpgate install command
	Command     string       // the client's own command; "" when none
	Entry       string       // the file entry
	Format      string       // "JSON" or "TOML"
	Link        template.URL // the client's install link; "" when none
	Bridge      bool         // the entry runs mcpgate bridge
}

type connectView struct {
	Options
	Heading string
	Clients []clientView
}

// Connect is the connect page: built once, served to every browser.
type Connect struct {
	body []byte
}

// NewConnect renders the connect page for opts.
func NewConnect(opts Options) (*Connect, error) {
	if opts.URL == "" {
		return nil, errors.New("web: the connect page needs the MCP URL")
	}
	if opts.Command == "" {
		opts.Command = "/usr/local/bin/mcpgate"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	v := connectView{Options: opts, Heading: opts.Title}
	if v.Heading == "" {
		v.Heading = opts.Name
	}
	if !opts.PublicTools {
		for i := range v.Scopes {
			v.Scopes[i].Tools = nil
		}
	}
	for _, c := range install.Clients() {
		e := install.Entry{URL: opts.URL, Command: opts.Command}
		entry, err := c.Snippet(e)
		if err != nil {
			return nil, err
		}
		format := "JSON"
		if c.Name == "codex" {
			format = "TOML"
		}
		v.Clients = append(v.Clients, clientView{
			Name: c.Name, Title: c.Title,
			Install: c.InstallCommand(e),
			Command: c.Command(e), Entry: entry, Format: format,
			// InstallLink encodes every part it builds the link from.
			Link:   template.URL(c.InstallLink(e)),
			Bridge: !c.Remote(),
		})
	}
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "connect.html", v); err != nil {
		return nil, err
	}
	return &Connect{body: b.Bytes()}, nil
}

// ServeHTTP serves the page to GET and HEAD of its own path; anything else
// gets 404, as an unrouted path does.
func (c *Connect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.NotFound(w, r)
		return
	}
	writeHTML(w, http.StatusOK, c.body)
}

// Negotiate sends a browser's visit (Browser) to the page and every other
// request to next, untouched. It runs before next's Host, Origin and token
// checks: a person opening the address gets the page, not a 401.
func (c *Connect) Negotiate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Browser(r) {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
