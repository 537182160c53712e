package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/mcpgate/mcpgate/gateway"
)

// The operator view: /admin behind an OpenID Connect login at the
// gateway's issuer (authorization code with PKCE and a nonce; the ID token
// verified by go-oidc), for logins that hold AdminOptions.Require. Its
// session is a signed cookie (Secure, HttpOnly, SameSite=Strict,
// short-lived) under a key every replica shares; its forms carry a CSRF
// token bound to that session. It shows, and ends, what runs on its own
// replica.

// Source is the gateway as the operator view reads it.
type Source interface {
	Snapshot() gateway.Snapshot
	End(ctx context.Context, id string) (gateway.Live, bool)
}

// Action is one thing an operator did in the view, for the audit trail.
type Action struct {
	Time        time.Time
	Name        string // "admin/login", "admin/end"
	Admin       string // the operator's user name
	AdminIssuer string
	AdminSub    string
	Outcome     string       // "ok", "refused" or "notFound"
	Target      gateway.Live // what admin/end ended; zero otherwise
}

// AdminOptions configure the operator view.
type AdminOptions struct {
	// Issuer is the OpenID Connect issuer, ClientID and ClientSecret
	// (empty for a public client) the client at it, RedirectURL its
	// redirect URI: the gateway's public URL + "/admin/callback".
	Issuer, ClientID string
	ClientSecret     string
	RedirectURL      string
	// Require is who may log in: "scope:NAME", "role:NAME" or
	// "group:NAME" (see Authorized).
	Require string
	// CookieKey signs the cookies; at least 32 bytes.
	CookieKey []byte
	// HTTPClient reaches the issuer; default http.DefaultClient.
	HTTPClient *http.Client
	// Source is the gateway; Events the ring of its audit events.
	Source Source
	Events *Ring
	// Audit records each action; nil: none.
	Audit func(Action)
	// CertNotAfter is when the serving certificate expires; nil without
	// TLS.
	CertNotAfter func() time.Time
	// Title names the gateway in the page's heading.
	Title string
	// SessionTTL is how long a login lasts; default 15 minutes.
	SessionTTL time.Duration
	// Refresh is how often the page refreshes its live part; default 5s.
	Refresh time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
}

const (
	loginCookie   = "__Host-mcpgate-login"
	sessionCookie = "__Host-mcpgate-admin"
	loginTTL      = 10 * time.Minute
	recentEvents  = 50
	// discoveryRetry is how long a failed discovery of the issuer is
	// remembered.
	discoveryRetry = 10 * time.Second
)

// Admin is the operator view's handler, mounted at /admin and /admin/.
type Admin struct {
	opts   AdminOptions
	log    *slog.Logger
	cookie signer

	mu        sync.Mutex
	provider  *oidc.Provider // nil until discovered
	failedAt  time.Time      // the last discovery that failed
	failedErr error

	reachMu   sync.Mutex
	reachAt   time.Time
	reachable error
}

// NewAdmin checks opts; the issuer is discovered at the first login, so a
// gateway starts while its issuer is down.
func NewAdmin(opts AdminOptions) (*Admin, error) {
	var errs []error
	if opts.Issuer == "" || opts.ClientID == "" || opts.RedirectURL == "" {
		errs = append(errs, errors.New("web: the operator view needs the issuer, a client id and the redirect URL"))
	}
	if len(opts.CookieKey) < 32 {
		errs = append(errs, errors.New("web: the cookie key needs at least 32 bytes"))
	}
	if _, _, err := parseRequire(opts.Require); err != nil {
		errs = append(errs, err)
	}
	if opts.Source == nil {
		errs = append(errs, errors.New("web: the operator view needs the gateway"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Events == nil {
		opts.Events = NewRing(0)
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 15 * time.Minute
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Admin{opts: opts, log: opts.Logger, cookie: signer{key: opts.CookieKey}}, nil
}

// ServeHTTP routes /admin and what is under it.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case r.URL.Path == "/admin" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		a.view(w, r)
	case r.URL.Path == "/admin/login" && r.Method == http.MethodGet:
		a.login(w, r)
	case r.URL.Path == "/admin/callback" && r.Method == http.MethodGet:
		a.callback(w, r)
	case r.URL.Path == "/admin/end" && r.Method == http.MethodPost:
		a.end(w, r)
	case r.URL.Path == "/admin/logout" && r.Method == http.MethodPost:
		a.logout(w, r)
	default:
		http.NotFound(w, r)
	}
}

// session is the signed content of the session cookie.
type session struct {
	User    string `json:"u"`
	Subject string `json:"s"`
	Issuer  string `json:"i"`
	CSRF    string `json:"c"`
	Expires int64  `json:"e"`
}

// current returns the request's valid session, or nil.
func (a *Admin) current(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	var s session
	if a.cookie.decode(sessionCookie, c.Value, &s) != nil || a.opts.Now().Unix() >= s.Expires || s.CSRF == "" {
		return nil
	}
	return &s
}

// checkForm accepts a form only from this site, with the session's CSRF
// token: SameSite=Strict already keeps the cookie off other sites'
// requests, the token and the Origin check hold when a browser does not.
func (a *Admin) checkForm(w http.ResponseWriter, r *http.Request) *session {
	s := a.current(r)
	if s == nil {
		a.fail(w, http.StatusUnauthorized, "Your login has expired. Log in again.")
		return nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		a.log.Warn("web: refused an operator form from another site", "user", s.User, "sec_fetch_site", site, "remote", r.RemoteAddr)
		a.fail(w, http.StatusForbidden, "This form was sent from another site.")
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			a.log.Warn("web: refused an operator form from another origin", "user", s.User, "origin", o, "remote", r.RemoteAddr)
			a.fail(w, http.StatusForbidden, "This form was sent from another site.")
			return nil
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		a.fail(w, http.StatusBadRequest, "The form could not be read.")
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.CSRF)) != 1 {
		a.log.Warn("web: refused an operator form without its CSRF token", "user", s.User, "remote", r.RemoteAddr)
		a.fail(w, http.StatusForbidden, "This form is not from your current login. Reload the page and try again.")
		return nil
	}
	return s
}

// end ends one session or per-user worker of this replica, as the
// operator's own audited action.
func (a *Admin) end(w http.ResponseWriter, r *http.Request) {
	s := a.checkForm(w, r)
	if s == nil {
		return
	}
	id := r.PostForm.Get("id")
	act := Action{Time: a.opts.Now(), Name: "admin/end", Admin: s.User, AdminIssuer: s.Issuer, AdminSub: s.Subject, Outcome: "notFound"}
	if l, ok := a.opts.Source.End(r.Context(), id); ok {
		act.Outcome, act.Target = "ok", l
		a.log.Info("web: an operator ended a worker", "admin", s.User, "kind", l.Kind, "id", l.ShortID(), "user", l.User)
	}
	a.audit(act)
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

func (a *Admin) logout(w http.ResponseWriter, r *http.Request) {
	if a.checkForm(w, r) == nil {
		return
	}
	setCookie(w, sessionCookie, "", 0, http.SameSiteStrictMode)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *Admin) audit(act Action) {
	if a.opts.Audit != nil {
		a.opts.Audit(act)
	}
}

func (a *Admin) fail(w http.ResponseWriter, status int, msg string) {
	render(w, a.log, "message.html", status, msg)
}

// issuerReachable fetches the issuer's discovery document, at most every
// 30 seconds, each try bounded to 3.
func (a *Admin) issuerReachable(ctx context.Context) error {
	a.reachMu.Lock()
	defer a.reachMu.Unlock()
	if now := a.opts.Now(); now.Sub(a.reachAt) < 30*time.Second && !a.reachAt.IsZero() {
		return a.reachable
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(a.opts.Issuer, "/")+"/.well-known/openid-configuration", nil)
		if err != nil {
			return err
		}
		resp, err := a.opts.HTTPClient.Do(req)
		if err != nil {
			return errors.New("no answer")
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}()
	a.reachAt, a.reachable = a.opts.Now(), err
	return err
}

// row is one running worker as the page shows it.
type row struct {
	gateway.Live
	Started time.Time
	Memory  int64
}

type adminView struct {
	Title, Replica, User, CSRF string
	Refresh                    int
	Snapshot                   gateway.Snapshot
	Sessions, Workers          []row
	Events, Refusals           []Event
	IssuerErr                  string
	Issuer                     string
	CertNotAfter               time.Time
	CertDaysLeft               int
	Now                        time.Time
}

func rows(list []gateway.Live) []row {
	out := make([]row, 0, len(list))
	for _, l := range list {
		started, rss := procInfo(l.Pid)
		out = append(out, row{Live: l, Started: started, Memory: rss})
	}
	return out
}

// view renders the operator view, or sends a visitor without a login to
// log in.
func (a *Admin) view(w http.ResponseWriter, r *http.Request) {
	s := a.current(r)
	if s == nil {
		http.Redirect(w, r, "/admin/login", http.StatusSeeOther)
		return
	}
	snap := a.opts.Source.Snapshot()
	v := adminView{
		Title: a.opts.Title, Replica: snap.Replica, User: s.User, CSRF: s.CSRF,
		Refresh: int(a.opts.Refresh / time.Second), Snapshot: snap,
		Sessions: rows(snap.Sessions), Workers: rows(snap.Workers),
		Issuer: a.opts.Issuer, Now: a.opts.Now(),
	}
	if v.Replica == "" {
		v.Replica, _ = os.Hostname()
	}
	v.Events, v.Refusals = a.opts.Events.Recent(recentEvents)
	if err := a.issuerReachable(r.Context()); err != nil {
		v.IssuerErr = err.Error()
	}
	if a.opts.CertNotAfter != nil {
		v.CertNotAfter = a.opts.CertNotAfter()
		v.CertDaysLeft = int(v.CertNotAfter.Sub(v.Now).Hours() / 24)
	}
	render(w, a.log, "admin.html", http.StatusOK, v)
}
