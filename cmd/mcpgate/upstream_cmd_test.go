package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/workerproto"
)

// mcpgate upstream refuses what would send a credential badly: a URL in
// the clear to another host or with one in its query, a headers file
// others may read (naming the file and the fix, never the value).
func TestUpstreamCommandRefuses(t *testing.T) {
	const secret = "s3cr3t-value"
	loose := filepath.Join(t.TempDir(), "h")
	require.NoError(t, os.WriteFile(loose, []byte("X-Api-Key: "+secret+"\n"), 0o600))
	require.NoError(t, os.Chmod(loose, 0o644))
	cases := map[string]struct {
		args []string
		want string
	}{
		"no name":            {[]string{"--url", "https://mcp.example.com/mcp"}, "needs --name and --url"},
		"a name with spaces": {[]string{"--name", "a b", "--url", "https://mcp.example.com/mcp"}, "--name must be"},
		"http to another host": {[]string{"--name", "docs", "--url", "http://mcp.example.com/mcp"},
			"https"},
		"a key in the query": {[]string{"--name", "docs", "--url", "https://mcp.example.com/mcp?key=" + secret}, "must not carry"},
		"a loose headers file": {[]string{"--name", "docs", "--url", "https://mcp.example.com/mcp", "--headers-file", loose},
			"mode 0644 lets group or others read or write it; it holds a credential: chmod 600 it"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := runWithEnv(t, nil, append([]string{"upstream"}, c.args...)...)
			require.Error(t, err)
			assert.Contains(t, stderr+err.Error(), c.want)
			if name != "a key in the query" { // the operator's own argument, echoed redacted or not
				assert.NotContains(t, stderr+err.Error(), secret)
			}
		})
	}
}

// A pre-started worker reads the gateway's identity line first; it never
// reaches the remote server, and the messages after it do.
func TestUpstreamCommandReadsTheIdentityLine(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Method string `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		methods = append(methods, m.Method)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer ts.Close()
	id := workerproto.Identity{User: "alice", Scope: workerproto.ScopeUser}
	in := string(id.Line()) + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	env := map[string]string{workerproto.EnvPrestarted: "true"}
	var stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(in), Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	require.NoError(t, m.Run(context.Background(), []string{"upstream", "--name", "remote", "--url", ts.URL + "/mcp"}))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"notifications/initialized"}, methods)
	assert.Contains(t, stderr.String(), "user=alice")
}

// upstreamPing runs mcpgate upstream with args, sends one ping and
// returns the answer line.
func upstreamPing(t *testing.T, args ...string) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	m := &Main{Stdin: inR, Stdout: outW, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- m.Run(context.Background(), append([]string{"upstream"}, args...))
		outW.Close()
	}()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	inW.Close()
	go io.Copy(io.Discard, outR)
	require.NoError(t, <-done)
	return line
}

// The remote server's certificate is verified: a private CA is trusted
// only when --ca-file names it, and without it the request fails naming
// the server and the reason.
func TestUpstreamVerifiesTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer ts.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644))
	// httptest's certificate names 127.0.0.1 and example.com.
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n", upstreamPing(t, "--name", "remote", "--url", ts.URL+"/mcp", "--ca-file", ca))
	refused := upstreamPing(t, "--name", "remote", "--url", ts.URL+"/mcp")
	assert.Contains(t, refused, `the remote server \"remote\" could not be reached: tls: failed to verify certificate`)
	assert.NotContains(t, refused, ts.URL, "the URL stays with the operator")
}
