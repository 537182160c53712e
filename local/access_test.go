package local

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// nobody is an account other than this process's, with its primary
// group, or a skip.
func nobody(t *testing.T) (*user.User, *user.Group) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil || u.Uid == strconv.Itoa(os.Geteuid()) {
		t.Skip("no account nobody apart from this process's")
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		t.Skip("nobody's group has no name")
	}
	return u, g
}

// TestAccessPrincipal: the owner is served as its account, under the
// socket's issuer and with its uid as the subject; another account only
// by a rule naming it or its group, with the rule's rights; a uid
// without an account never.
func TestAccessPrincipal(t *testing.T) {
	u, g := nobody(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	peer := Peer{UID: uint32(uid), GID: uint32(gid)}
	self := Peer{UID: uint32(os.Geteuid())}

	a, err := NewAccess(AccessOptions{Issuer: "unix:test"})
	require.NoError(t, err)
	p, err := a.Principal(self)
	require.NoError(t, err)
	assert.Equal(t, "unix:test", p.Issuer)
	assert.Equal(t, strconv.Itoa(os.Geteuid()), p.Subject)
	assert.False(t, p.ReadOnly)
	assert.Nil(t, p.Tools)
	_, err = a.Principal(peer)
	var re *RefusedError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "(nobody) may not use this socket")
	_, err = a.Principal(Peer{UID: 3999999})
	assert.ErrorContains(t, err, "has no account name")

	for _, r := range []Rule{{User: "nobody", ReadOnly: true, Tools: []string{"status"}}, {Group: g.Name, ReadOnly: true, Tools: []string{"status"}}} {
		a, err := NewAccess(AccessOptions{Issuer: "unix:test", Rules: []Rule{{User: "root"}, r}})
		require.NoError(t, err)
		p, err := a.Principal(peer)
		require.NoError(t, err)
		assert.Equal(t, auth.Owner{Issuer: "unix:test", Subject: u.Uid, UserID: "nobody"}, p.Owner())
		assert.True(t, p.ReadOnly)
		assert.Equal(t, []string{"status"}, p.Tools)
	}

	_, err = NewAccess(AccessOptions{Rules: []Rule{{User: "no-such-account-here"}, {Group: "no-such-group-here"}, {User: "a", Group: "b"}}})
	assert.ErrorContains(t, err, `no account "no-such-account-here"`)
	assert.ErrorContains(t, err, `no group "no-such-group-here"`)
	assert.ErrorContains(t, err, "not both or neither")
}

// TestGuard: a request without a peer decision (not from a Listener) is
// refused; one with a token is refused with 400, the token not echoed;
// the owner's goes on with its principal.
func TestGuard(t *testing.T) {
	a, err := NewAccess(AccessOptions{Issuer: "unix:test"})
	require.NoError(t, err)
	var got *auth.Principal
	h := a.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = auth.PrincipalFrom(r.Context()) }))

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	assert.Equal(t, http.StatusForbidden, w.Code)
	assert.Nil(t, got)

	ctx := a.ConnContext(nil)(t.Context(), &Conn{peer: Peer{UID: uint32(os.Geteuid())}})
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer secret-token-value")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.NotContains(t, w.Body.String(), "secret-token-value")
	assert.Nil(t, got)

	r.Header.Del("Authorization")
	h.ServeHTTP(httptest.NewRecorder(), r)
	require.NotNil(t, got)
	assert.Equal(t, "unix:test", got.Issuer)
	assert.True(t, FromSocket(r))
	assert.False(t, FromSocket(httptest.NewRequest(http.MethodPost, "/mcp", nil)))
}
