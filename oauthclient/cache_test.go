package oauthclient

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rotatingIssuer is a token endpoint that rotates refresh tokens and, on
// the reuse of a spent one, revokes the whole chain (RFC 9700 §4.14.2):
// every token it issued stops working.
type rotatingIssuer struct {
	mu        sync.Mutex
	gen       int  // the live refresh token is r<gen>, its access token a<gen>
	refreshes int  // refresh requests answered with new tokens
	revoked   bool // a spent refresh token came back
}

func (ri *rotatingIssuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	r.ParseForm()
	if r.Form.Get("grant_type") != "refresh_token" {
		http.Error(w, "unsupported", http.StatusBadRequest)
		return
	}
	if ri.revoked || r.Form.Get("refresh_token") != fmt.Sprintf("r%d", ri.gen) {
		ri.revoked = true
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
		return
	}
	ri.gen++
	ri.refreshes++
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":"a%d","token_type":"Bearer","expires_in":3600,"refresh_token":"r%d"}`, ri.gen, ri.gen)
}

// live says whether the issuer still honours access token tok.
func (ri *rotatingIssuer) live(tok string) bool {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return !ri.revoked && tok == fmt.Sprintf("a%d", ri.gen)
}

func expiredEntry(tokenURL string) *Entry {
	return &Entry{Issuer: "https://issuer.example", Resource: "https://mcp.example/mcp", ClientID: "c",
		TokenURL: tokenURL, AccessToken: "a0", TokenType: "Bearer", RefreshToken: "r0",
		Expiry: time.Now().Add(-time.Hour)}
}

// Eight processes that find the token expired at once (each with its own
// handle on the cache file, as separate mcpgate processes have) refresh
// it once between them: the rotated refresh token is never spent twice,
// so the issuer does not revoke the login, and all eight get the new
// access token.
func TestParallelRefreshSpendsTheRefreshTokenOnce(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			ri := &rotatingIssuer{}
			srv := httptest.NewServer(ri)
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "mcpgate", "tokens.json")
			require.NoError(t, Cache{Path: path}.Put(expiredEntry(srv.URL)))

			start := make(chan struct{})
			got := make([]string, 8)
			errs := make([]error, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					ts, err := NewTokenSource(Cache{Path: path}, srv.Client(), "https://mcp.example/mcp")
					if err != nil {
						errs[i] = err
						return
					}
					<-start
					tok, err := ts.Token()
					if err == nil {
						got[i] = tok.AccessToken
					}
					errs[i] = err
				})
			}
			close(start)
			wg.Wait()
			for i := range 8 {
				require.NoError(t, errs[i], "process %d", i)
				assert.True(t, ri.live(got[i]), "process %d got %q, which the issuer no longer honours", i, got[i])
			}
			assert.Equal(t, 1, ri.refreshes, "one refresh at the issuer")
			assert.False(t, ri.revoked, "no refresh token was spent twice")
		})
	}
}

// Logins stored at once by separate processes are all kept: each store
// reads the file again under the lock before replacing it.
func TestParallelPutsKeepEveryLogin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate", "tokens.json")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			e := expiredEntry("https://issuer.example/token")
			e.Issuer = fmt.Sprintf("https://issuer%d.example", i)
			e.RefreshToken = fmt.Sprintf("rotated-%d", i)
			assert.NoError(t, Cache{Path: path}.Put(e))
		})
	}
	wg.Wait()
	for i := range 16 {
		e, err := Cache{Path: path}.Get(fmt.Sprintf("https://issuer%d.example", i), "https://mcp.example/mcp")
		require.NoError(t, err)
		if assert.NotNil(t, e, "login %d was lost", i) {
			assert.Equal(t, fmt.Sprintf("rotated-%d", i), e.RefreshToken)
		}
	}
}

// A cache in a folder others can write, or a cache file of
// another user, is refused: tokens could be read, or planted.
func TestCacheRefusesWhatIsNotPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows keeps the cache private by the profile's ACL, not by mode bits")
	}
	dir := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o775))
	path := filepath.Join(dir, "tokens.json")
	err := Cache{Path: path}.Put(expiredEntry("https://issuer.example/token"))
	require.ErrorContains(t, err, "writable by others")
	_, err = Cache{Path: path}.Lookup("https://mcp.example/mcp")
	require.ErrorContains(t, err, "writable by others")

	require.NoError(t, os.Chmod(dir, 0o700))
	require.NoError(t, Cache{Path: path}.Put(expiredEntry("https://issuer.example/token")))
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = Cache{Path: path}.Lookup("https://mcp.example/mcp")
	require.ErrorContains(t, err, "readable by others")
	require.NoError(t, os.Chmod(path, 0o600))

	if os.Getuid() != 0 {
		t.Log("not root: the owner check needs a file of another user")
		return
	}
	require.NoError(t, os.Chown(path, 65534, 65534))
	_, err = Cache{Path: path}.Lookup("https://mcp.example/mcp")
	require.ErrorContains(t, err, "belongs to another user")
}

// The same with eight real processes, each waiting on stdin after reading
// the cache so that they all refresh at once: the lock holds between
// processes, not only between handles of one.
func TestParallelRefreshAcrossProcesses(t *testing.T) {
	ri := &rotatingIssuer{}
	srv := httptest.NewServer(ri)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "mcpgate", "tokens.json")
	require.NoError(t, Cache{Path: path}.Put(expiredEntry(srv.URL)))
	type child struct {
		cmd   *exec.Cmd
		go_   io.WriteCloser
		out   *strings.Builder
		ready io.ReadCloser
	}
	var children []child
	for range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRefreshHelperProcess$")
		cmd.Env = append(os.Environ(), "MCPGATE_REFRESH_HELPER_CACHE="+path)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		ready, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var errb strings.Builder
		cmd.Stderr = &errb
		require.NoError(t, cmd.Start())
		children = append(children, child{cmd: cmd, go_: in, out: &errb, ready: ready})
	}
	outs := make([]*bufio.Reader, len(children))
	for i, c := range children {
		outs[i] = bufio.NewReader(c.ready)
		line, err := outs[i].ReadString('\n')
		require.NoError(t, err, "child %d: %s", i, c.out)
		require.Equal(t, "loaded\n", line)
	}
	for _, c := range children {
		io.WriteString(c.go_, "go\n")
		c.go_.Close()
	}
	for i, c := range children {
		rest, _ := io.ReadAll(outs[i])
		require.NoError(t, c.cmd.Wait(), "child %d: %s", i, c.out)
		tok := strings.TrimSpace(strings.TrimPrefix(string(rest), "token "))
		assert.True(t, ri.live(tok), "child %d got %q, which the issuer no longer honours", i, tok)
	}
	assert.Equal(t, 1, ri.refreshes, "one refresh at the issuer")
	assert.False(t, ri.revoked)
}

// TestRefreshHelperProcess is the child of TestParallelRefreshAcrossProcesses.
func TestRefreshHelperProcess(t *testing.T) {
	path := os.Getenv("MCPGATE_REFRESH_HELPER_CACHE")
	if path == "" {
		t.Skip("the child process of TestParallelRefreshAcrossProcesses")
	}
	ts, err := NewTokenSource(Cache{Path: path}, http.DefaultClient, "https://mcp.example/mcp")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("loaded")
	bufio.NewReader(os.Stdin).ReadString('\n')
	tok, err := ts.Token()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println("token " + tok.AccessToken)
	os.Exit(0)
}
