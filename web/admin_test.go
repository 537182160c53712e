package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/gateway"
)

// fakeSource is a gateway with one session, for the view.
type fakeSource struct {
	mu    sync.Mutex
	live  []gateway.Live
	ended []string
}

func (f *fakeSource) Snapshot() gateway.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return gateway.Snapshot{Replica: "replica-a", Sessions: append([]gateway.Live(nil), f.live...),
		Limits: []gateway.Usage{{Key: "limits.max_sessions", Used: int64(len(f.live)), Max: 1024}}}
}

func (f *fakeSource) End(_ context.Context, id string) (gateway.Live, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range f.live {
		if l.ID == id {
			f.live = append(f.live[:i], f.live[i+1:]...)
			f.ended = append(f.ended, id)
			return l, true
		}
	}
	return gateway.Live{}, false
}

type adminFixture struct {
	iss     *authtest.Issuer
	admin   *Admin
	srv     *httptest.Server
	src     *fakeSource
	now     time.Time
	mu      sync.Mutex
	actions []Action
}

const adminClient = "mcpgate-admin"

func newAdminFixture(t *testing.T, require_ string) *adminFixture {
	t.Helper()
	f := &adminFixture{iss: authtest.New(t), now: time.Now()}
	f.iss.SetUserClaims("alice", map[string]any{"realm_access": map[string]any{"roles": []any{"mcp-admin"}}, "groups": []any{"/ops"}})
	f.iss.SetUserClaims("mallory", map[string]any{"realm_access": map[string]any{"roles": []any{"mcp-user"}}})
	f.src = &fakeSource{live: []gateway.Live{{ID: "0123456789abcdef0123456789abcdef", Kind: gateway.WorkerSession, User: "bob<script>", Pid: 1}}}
	mux := http.NewServeMux()
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	a, err := NewAdmin(AdminOptions{
		Issuer: f.iss.URL, ClientID: adminClient, RedirectURL: f.srv.URL + "/admin/callback",
		Require: require_, CookieKey: []byte(strings.Repeat("k", 32)), HTTPClient: f.iss.Client(),
		Source: f.src, Title: "Team <data>",
		Audit: func(a Action) { f.mu.Lock(); f.actions = append(f.actions, a); f.mu.Unlock() },
		Now:   func() time.Time { return f.now },
	})
	require.NoError(t, err)
	f.admin = a
	mux.Handle("/admin", a)
	mux.Handle("/admin/", a)
	return f
}

// do sends a request to the gateway side without following redirects.
func (f *adminFixture) do(t *testing.T, method, path string, cookies []*http.Cookie, form url.Values, header map[string]string) *http.Response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// startLogin asks /admin/login and returns the login cookie and the
// issuer's authorization URL.
func (f *adminFixture) startLogin(t *testing.T) (*http.Cookie, *url.URL) {
	t.Helper()
	resp := f.do(t, "GET", "/admin/login", nil, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	c := cookieNamed(resp, loginCookie)
	require.NotNil(t, c)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	return c, u
}

// authorize lets the issuer approve as user and returns the callback URL
// it redirects to.
func (f *adminFixture) authorize(t *testing.T, user string, u *url.URL) *url.URL {
	t.Helper()
	f.iss.LoginUser = user
	c := *f.iss.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(u.String())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	return back
}

// login runs the whole login as user and returns the callback's answer.
func (f *adminFixture) login(t *testing.T, user string) *http.Response {
	t.Helper()
	lc, u := f.startLogin(t)
	back := f.authorize(t, user, u)
	return f.do(t, "GET", "/admin/callback?"+back.RawQuery, []*http.Cookie{lc}, nil, nil)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestAdminLoginAndView(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")

	resp := f.do(t, "GET", "/admin", nil, nil, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/admin/login", resp.Header.Get("Location"))

	lc, u := f.startLogin(t)
	assert.True(t, lc.Secure && lc.HttpOnly, "login cookie %+v", lc)
	assert.Equal(t, http.SameSiteLaxMode, lc.SameSite, "the callback is a navigation from the issuer")
	assert.Equal(t, "/", lc.Path)
	assert.LessOrEqual(t, lc.MaxAge, int(loginTTL.Seconds()))
	q := u.Query()
	assert.True(t, strings.HasPrefix(u.String(), f.iss.URL+"/authorize?"))
	assert.Equal(t, "S256", q.Get("code_challenge_method"))
	assert.NotEmpty(t, q.Get("code_challenge"))
	assert.NotEmpty(t, q.Get("nonce"))
	assert.Len(t, q.Get("state"), 64)
	assert.Equal(t, adminClient, q.Get("client_id"))
	assert.Contains(t, strings.Fields(q.Get("scope")), "openid")

	back := f.authorize(t, "alice", u)
	resp = f.do(t, "GET", "/admin/callback?"+back.RawQuery, []*http.Cookie{lc}, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	sc := cookieNamed(resp, sessionCookie)
	require.NotNil(t, sc)
	assert.True(t, sc.Secure, "Secure")
	assert.True(t, sc.HttpOnly, "HttpOnly")
	assert.Equal(t, http.SameSiteStrictMode, sc.SameSite)
	assert.Equal(t, "/", sc.Path)
	assert.Equal(t, 15*60, sc.MaxAge, "short-lived")
	assert.Empty(t, sc.Domain)
	cleared := cookieNamed(resp, loginCookie)
	require.NotNil(t, cleared)
	assert.Negative(t, cleared.MaxAge, "the login cookie is single use")

	resp = f.do(t, "GET", "/admin", []*http.Cookie{sc}, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	body := readBody(t, resp)
	assert.Contains(t, body, "Logged in as <strong>alice</strong>")
	assert.Contains(t, body, "replica <strong>replica-a</strong> only")
	assert.Contains(t, body, "bob&lt;script&gt;", "a user id is escaped")
	assert.NotContains(t, body, "bob<script>")
	assert.Contains(t, body, "Operator view: Team &lt;data&gt;")
	assert.Contains(t, body, "<code>01234567</code>")
	assert.Contains(t, body, "<span class=\"good\">reachable</span>")

	f.mu.Lock()
	require.Len(t, f.actions, 1)
	assert.Equal(t, Action{Time: f.now, Name: "admin/login", Admin: "alice", AdminIssuer: f.iss.URL, AdminSub: f.actions[0].AdminSub, Outcome: "ok"}, f.actions[0])
	f.mu.Unlock()

	// The session expires.
	f.now = f.now.Add(15*time.Minute + time.Second)
	resp = f.do(t, "GET", "/admin", []*http.Cookie{sc}, nil, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "an expired session logs in again")
}

func TestAdminRefusesLoginWithoutTheRole(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	resp := f.login(t, "mallory")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Nil(t, cookieNamed(resp, sessionCookie), "no session")
	assert.Contains(t, readBody(t, resp), "may not open the operator view")
	f.mu.Lock()
	require.Len(t, f.actions, 1)
	assert.Equal(t, "refused", f.actions[0].Outcome)
	assert.Equal(t, "mallory", f.actions[0].Admin)
	f.mu.Unlock()
}

func TestAdminRequireForms(t *testing.T) {
	for _, tt := range []struct {
		require string
		user    string
		ok      bool
	}{
		{"group:ops", "alice", true},
		{"group:/ops", "alice", true},
		{"group:ops", "mallory", false},
		{"role:mcp-user", "mallory", true},
		{"scope:mcp:admin", "alice", true}, // the test issuer grants what is asked
	} {
		t.Run(tt.require+" "+tt.user, func(t *testing.T) {
			f := newAdminFixture(t, tt.require)
			resp := f.login(t, tt.user)
			if tt.ok {
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			} else {
				assert.Equal(t, http.StatusForbidden, resp.StatusCode)
			}
		})
	}
	claims := map[string]any{"resource_access": map[string]any{"other": map[string]any{"roles": []any{"mcp-admin"}}}, "roles": "mcp-admin"}
	assert.False(t, Authorized("role:mcp-admin", adminClient, claims, nil), "another client's role, a role that is not a list")
	claims = map[string]any{"resource_access": map[string]any{adminClient: map[string]any{"roles": []any{"mcp-admin"}}}}
	assert.True(t, Authorized("role:mcp-admin", adminClient, claims, nil))
	assert.False(t, Authorized("scope:admin", adminClient, nil, []string{"admin2", "xadmin"}))
}

// TestAdminLoginState: the callback takes only the state, the PKCE
// verifier and the nonce of the login that this browser started.
func TestAdminLoginState(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")

	t.Run("another state", func(t *testing.T) {
		lc, u := f.startLogin(t)
		back := f.authorize(t, "alice", u)
		q := back.Query()
		q.Set("state", strings.Repeat("0", 64))
		resp := f.do(t, "GET", "/admin/callback?"+q.Encode(), []*http.Cookie{lc}, nil, nil)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Nil(t, cookieNamed(resp, sessionCookie))
	})
	t.Run("no login cookie", func(t *testing.T) {
		_, u := f.startLogin(t)
		back := f.authorize(t, "alice", u)
		resp := f.do(t, "GET", "/admin/callback?"+back.RawQuery, nil, nil, nil)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a login started in another browser (login CSRF)")
	})
	t.Run("an altered login cookie", func(t *testing.T) {
		lc, u := f.startLogin(t)
		back := f.authorize(t, "alice", u)
		bad := *lc
		bad.Value = "x" + bad.Value
		resp := f.do(t, "GET", "/admin/callback?"+back.RawQuery, []*http.Cookie{&bad}, nil, nil)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
	t.Run("another login's code (PKCE)", func(t *testing.T) {
		lcA, uA := f.startLogin(t)
		_, uB := f.startLogin(t)
		backB := f.authorize(t, "alice", uB)
		q := backB.Query()
		q.Set("state", uA.Query().Get("state")) // A's state, B's code
		resp := f.do(t, "GET", "/admin/callback?"+q.Encode(), []*http.Cookie{lcA}, nil, nil)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the code is bound to B's verifier")
		assert.Nil(t, cookieNamed(resp, sessionCookie))
	})
	t.Run("another nonce", func(t *testing.T) {
		lc, u := f.startLogin(t)
		back := f.authorize(t, "alice", u)
		var st loginState
		require.NoError(t, f.admin.cookie.decode(loginCookie, lc.Value, &st))
		st.Nonce = strings.Repeat("n", 64)
		v, err := f.admin.cookie.encode(loginCookie, st)
		require.NoError(t, err)
		resp := f.do(t, "GET", "/admin/callback?"+back.RawQuery, []*http.Cookie{{Name: loginCookie, Value: v}}, nil, nil)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Contains(t, readBody(t, resp), "not made for this login")
	})
	t.Run("a session cookie is not a login cookie", func(t *testing.T) {
		resp := f.login(t, "alice")
		sc := cookieNamed(resp, sessionCookie)
		require.NotNil(t, sc)
		_, u := f.startLogin(t)
		back := f.authorize(t, "alice", u)
		resp = f.do(t, "GET", "/admin/callback?"+back.RawQuery, []*http.Cookie{{Name: loginCookie, Value: sc.Value}}, nil, nil)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
	t.Run("another issuer in the answer", func(t *testing.T) {
		lc, u := f.startLogin(t)
		back := f.authorize(t, "alice", u)
		q := back.Query()
		q.Set("iss", "https://evil.example")
		resp := f.do(t, "GET", "/admin/callback?"+q.Encode(), []*http.Cookie{lc}, nil, nil)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
}

// TestAdminEndCSRF: ending a worker needs the session's CSRF token and a
// same-site request; the end is audited as the operator's.
func TestAdminEndCSRF(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	sc := cookieNamed(f.login(t, "alice"), sessionCookie)
	require.NotNil(t, sc)
	var s session
	require.NoError(t, f.admin.cookie.decode(sessionCookie, sc.Value, &s))
	id := f.src.live[0].ID
	cookies := []*http.Cookie{sc}

	for _, tt := range []struct {
		name   string
		form   url.Values
		header map[string]string
		cookie bool
		want   int
	}{
		{"no token", url.Values{"id": {id}}, nil, true, http.StatusForbidden},
		{"another token", url.Values{"id": {id}, "csrf": {strings.Repeat("0", 64)}}, nil, true, http.StatusForbidden},
		{"another site", url.Values{"id": {id}, "csrf": {s.CSRF}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, true, http.StatusForbidden},
		{"another origin", url.Values{"id": {id}, "csrf": {s.CSRF}}, map[string]string{"Origin": "https://evil.example"}, true, http.StatusForbidden},
		{"no session", url.Values{"id": {id}, "csrf": {s.CSRF}}, nil, false, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cookies
			if !tt.cookie {
				c = nil
			}
			resp := f.do(t, "POST", "/admin/end", c, tt.form, tt.header)
			assert.Equal(t, tt.want, resp.StatusCode)
			assert.Empty(t, f.src.ended)
		})
	}
	resp := f.do(t, "GET", "/admin/end?id="+id+"&csrf="+s.CSRF, cookies, nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a GET ends nothing")

	resp = f.do(t, "POST", "/admin/end", cookies, url.Values{"id": {id}, "csrf": {s.CSRF}}, map[string]string{"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"})
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, []string{id}, f.src.ended)
	f.mu.Lock()
	last := f.actions[len(f.actions)-1]
	f.mu.Unlock()
	assert.Equal(t, "admin/end", last.Name)
	assert.Equal(t, "alice", last.Admin)
	assert.Equal(t, "ok", last.Outcome)
	assert.Equal(t, "bob<script>", last.Target.User)

	resp = f.do(t, "POST", "/admin/logout", cookies, url.Values{"csrf": {s.CSRF}}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	out := cookieNamed(resp, sessionCookie)
	require.NotNil(t, out)
	assert.Negative(t, out.MaxAge)
}

func TestRing(t *testing.T) {
	r := NewRing(3)
	for i, d := range []string{gateway.DecisionAllowed, gateway.DecisionReadOnly, gateway.DecisionAllowed, gateway.DecisionPolicy, gateway.DecisionAllowed} {
		r.Call(&gateway.CallEvent{User: string(rune('a' + i)), Decision: d, Arguments: []byte(`{"secret":1}`)})
	}
	events, refusals := r.Recent(10)
	require.Len(t, events, 3, "bounded")
	assert.Equal(t, []string{"e", "d", "c"}, []string{events[0].User, events[1].User, events[2].User})
	require.Len(t, refusals, 2)
	assert.Equal(t, "d", refusals[0].User)
	assert.Equal(t, "b", refusals[1].User)
}

type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestAdminIssuerDown: while the issuer is down a login gets 503, and a
// flood of logins costs the issuer one discovery per retry interval.
func TestAdminIssuerDown(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	ct := &countingTransport{next: f.iss.Client().Transport}
	f.admin.opts.HTTPClient = &http.Client{Transport: ct}
	f.iss.Stop()
	for range 5 {
		resp := f.do(t, "GET", "/admin/login", nil, nil, nil)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Nil(t, cookieNamed(resp, loginCookie))
	}
	assert.Equal(t, int64(1), ct.n.Load(), "one discovery for five logins")

	require.NoError(t, f.iss.Start())
	resp := f.do(t, "GET", "/admin/login", nil, nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "within the retry interval")
	f.now = f.now.Add(discoveryRetry)
	resp = f.do(t, "GET", "/admin/login", nil, nil, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "discovered after the interval")
}
