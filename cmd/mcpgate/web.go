package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/certs"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/web"
)

// pages is what the web pages need from serve besides the configuration.
type pages struct {
	authn    *auth.Authenticator // nil in the localhost mode
	events   *web.Ring           // the operator view's events; nil without it
	audit    *audit.Log
	notAfter func() time.Time // the serving certificate's expiry; nil without TLS
	addr     net.Addr         // the listener's, for the page's URL in the localhost mode
	scheme   string
	log      *slog.Logger
}

// adminEvents returns the ring of audit events the operator view shows,
// added to the gateway's observers; nil without the operator view.
func adminEvents(cfg *config.Config, gopts *gateway.Options) *web.Ring {
	if !cfg.Web.Enabled || cfg.Web.Admin == "" {
		return nil
	}
	r := web.NewRing(0)
	gopts.Observers = append(gopts.Observers, r)
	return r
}

// routeMCP mounts /mcp, and with web.enabled the connect page at / and for
// a browser's GET /mcp (web.Browser), decided before the gateway's checks
// so that a person opening the address gets the page, not a 401; with
// web.admin the operator view at /admin.
func routeMCP(mux *http.ServeMux, g *gateway.Gateway, cfg *config.Config, p pages) error {
	if !cfg.Web.Enabled {
		mux.Handle("/mcp", g)
		return nil
	}
	opts, err := connectOptions(cfg, p.authn, pageURL(cfg, p.addr, p.scheme))
	if err != nil {
		return err
	}
	page, err := web.NewConnect(opts)
	if err != nil {
		return err
	}
	mux.Handle("/mcp", page.Negotiate(g))
	mux.Handle("/{$}", page)
	if cfg.Web.Admin == "" {
		return nil
	}
	admin, err := newAdmin(g, cfg, p)
	if err != nil {
		return err
	}
	mux.Handle("/admin", admin)
	mux.Handle("/admin/", admin)
	return nil
}

// newAdmin maps the configuration to the operator view.
func newAdmin(g *gateway.Gateway, cfg *config.Config, p pages) (*web.Admin, error) {
	key, err := cfg.CookieKey()
	if err != nil {
		return nil, err
	}
	var secret []byte
	if cfg.Web.ClientSecretFile != "" {
		if secret, err = cfg.WebClientSecret(); err != nil {
			return nil, err
		}
	}
	client, err := issuerClient(cfg)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(pageURL(cfg, p.addr, p.scheme), "/mcp")
	return web.NewAdmin(web.AdminOptions{
		Issuer: cfg.Auth.Issuer, ClientID: cfg.Web.ClientID, ClientSecret: string(secret),
		RedirectURL: base + "/admin/callback", Require: cfg.Web.Admin, CookieKey: key,
		HTTPClient: client, Source: g, Events: p.events, CertNotAfter: p.notAfter,
		Title: cfg.Server.Title, Logger: p.log,
		Audit: func(a web.Action) {
			p.audit.Action(audit.Action{Time: a.Time, Name: a.Name, Admin: a.Admin, AdminIssuer: a.AdminIssuer,
				AdminSub: a.AdminSub, Outcome: a.Outcome, TargetKind: a.Target.Kind, TargetID: a.Target.ShortID(),
				TargetUser: a.Target.User, TargetPid: a.Target.Pid})
		},
	})
}

// issuerClient is the HTTP client that reaches auth.issuer: trusting
// auth.issuer_ca_file when set, with auth's default timeout.
func issuerClient(cfg *config.Config) (*http.Client, error) {
	if cfg.Auth.IssuerCAFile == "" {
		return &http.Client{Timeout: auth.DefaultHTTPTimeout}, nil
	}
	c, err := certs.ClientTrusting(cfg.Auth.IssuerCAFile)
	if err != nil {
		return nil, fmt.Errorf("mcpgate: auth.issuer_ca_file: %w", err)
	}
	return c, nil
}

// pageURL is the MCP URL the connect page shows: the canonical resource,
// with the port the listener got when the configuration asked for any.
func pageURL(cfg *config.Config, addr net.Addr, scheme string) string {
	if cfg.Server.PublicURL != "" || addr == nil {
		return cfg.Resource()
	}
	u, err := url.Parse(cfg.Resource())
	if err != nil {
		return cfg.Resource()
	}
	_, port, _ := net.SplitHostPort(addr.String())
	u.Scheme, u.Host = scheme, net.JoinHostPort(u.Hostname(), port)
	return u.String()
}

// connectOptions is what the connect page says: the RFC 9728 metadata
// (authorization servers, scopes) and what each scope grants, by toolset.
// Rules on a role or group are left out: their names are not public.
func connectOptions(cfg *config.Config, authn *auth.Authenticator, mcpURL string) (web.Options, error) {
	o := web.Options{
		Title: cfg.Server.Title, Name: cfg.Server.Name, URL: mcpURL,
		PublicTools: cfg.Web.PublicTools, ReadOnly: cfg.Server.ReadOnly,
	}
	if !cfg.Authenticated() {
		return o, nil
	}
	o.AuthorizationServers = cfg.Auth.AuthorizationServers
	if authn != nil {
		o.MetadataURL = authn.MetadataURL()
	}
	builtin := len(cfg.Worker.Command) == 0
	toolsets := cfg.Worker.Toolsets
	if builtin && len(toolsets) == 0 {
		toolsets = tools.Builtin()
	}
	var all, safe []string
	if builtin {
		var err error
		if all, err = tools.ToolNames(toolsets); err != nil {
			return o, err
		}
		if safe, err = tools.SafeToolNames(toolsets); err != nil {
			return o, err
		}
	} else {
		all, safe = nil, cfg.Worker.SafeTools
	}
	a := cfg.Auth
	basic := "every tool"
	basicTools := all
	if a.WriteScope != "" || cfg.Server.ReadOnly {
		basic, basicTools = "read-only tools", safe
	}
	if len(a.Policies) > 0 {
		basic, basicTools = "needed on every token; the tools come from the rules below", nil
	}
	for _, s := range a.RequiredScopes {
		o.Scopes = append(o.Scopes, web.Scope{Name: s, Grants: "required on every token: " + basic, Toolsets: toolsetsIf(builtin && len(a.Policies) == 0, toolsets), Tools: basicTools})
	}
	if a.WriteScope != "" {
		grants := "read-write: every tool"
		if cfg.Server.ReadOnly {
			grants = "nothing more: this server is read-only"
		}
		o.Scopes = append(o.Scopes, web.Scope{Name: a.WriteScope, Grants: grants, Toolsets: toolsetsIf(builtin, toolsets), Tools: all})
	}
	rules, err := cfg.PolicyRules()
	if err != nil {
		return o, err
	}
	for i, p := range a.Policies {
		if p.Scope == "" {
			continue
		}
		o.Scopes = append(o.Scopes, web.Scope{Name: p.Scope, Grants: "the tools of an access rule", Toolsets: p.Toolsets, Tools: rules[i].Tools})
	}
	for _, s := range a.ExtraScopes {
		if slices.ContainsFunc(o.Scopes, func(x web.Scope) bool { return x.Name == s }) {
			continue
		}
		o.Scopes = append(o.Scopes, web.Scope{Name: s, Grants: "asked for so that the issuer adds what the gateway reads (such as the user name); grants no tool"})
	}
	return o, nil
}

func toolsetsIf(ok bool, toolsets []string) []string {
	if ok {
		return toolsets
	}
	return nil
}
