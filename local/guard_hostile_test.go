//go:build linux

package local

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// TestGuardHostileAuthorization: over a real socket, whatever way a
// client spells a token (lower case, an empty Authorization before the
// real one, the real one after an empty one, folded across two header
// lines), the request is refused with 400 and never reaches the handler:
// a client must not believe it acts as its token's user.
func TestGuardHostileAuthorization(t *testing.T) {
	a, err := NewAccess(AccessOptions{Issuer: "unix:test"})
	require.NoError(t, err)
	reached := make(chan *auth.Principal, 16)
	srv := &http.Server{
		Handler: a.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached <- auth.PrincipalFrom(r.Context())
		})),
		ConnContext: a.ConnContext(nil),
	}
	sock := filepath.Join(t.TempDir(), "run", SocketName)
	ln, err := Listen(sock, Options{})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })

	for name, hdrs := range map[string]string{
		"lower case":         "authorization: Bearer secret-token-value\r\n",
		"empty first":        "Authorization:\r\nAuthorization: Bearer secret-token-value\r\n",
		"empty first spaced": "Authorization:    \r\nAuthorization: Bearer secret-token-value\r\n",
		"empty only":         "Authorization: \r\n",
		"real then empty":    "Authorization: Bearer secret-token-value\r\nAuthorization:\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Dial(context.Background(), sock, Options{})
			require.NoError(t, err)
			defer c.Close()
			_, err = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n"+hdrs+"\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
			assert.NotContains(t, string(body), "secret-token-value")
			assert.True(t, strings.Contains(string(body), "Authorization"), "%s", body)
			select {
			case p := <-reached:
				t.Errorf("a request with an Authorization header reached the handler as %v", p)
			default:
			}
		})
	}
}
