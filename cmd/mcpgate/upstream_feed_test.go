//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
)

// TestUpstreamCredentialFeed: mcpgate upstream sends the header set the
// gateway handed it on its credential socket with every request, beside
// the headers file (replacing a line of the same name), and a set sent
// before a request is the one that request carries: a renewal needs no
// new worker.
func TestUpstreamCredentialFeed(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	}))
	defer ts.Close()
	static := filepath.Join(t.TempDir(), "h")
	require.NoError(t, os.WriteFile(static, []byte("Authorization: Bearer static\nX-Api-Key: k\n"), 0o600))
	set := func(tok string) credential.Set {
		return credential.Set{Header: http.Header{"Authorization": {"Bearer " + tok}}}
	}
	feed, file, err := credential.NewHeaderFeed(set("one"))
	require.NoError(t, err)
	defer feed.Close()
	defer file.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	m := &Main{Stdin: inR, Stdout: outW, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- m.Run(context.Background(), []string{"upstream", "--name", "remote", "--url", ts.URL + "/mcp",
			"--headers-file", static, "--credential-fd", strconv.Itoa(int(file.Fd()))})
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	ping := func(id int) {
		_, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`+"\n", id)
		require.NoError(t, err)
		line, err := out.ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, line, `"result"`)
	}
	ping(1)
	require.NoError(t, feed.Send(set("two")))
	ping(2)
	ping(3)
	inW.Close()
	go io.Copy(io.Discard, outR)
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3)
	var got []string
	for _, h := range seen {
		got = append(got, h.Get("Authorization"))
		assert.Equal(t, "k", h.Get("X-Api-Key"), "the headers file's other lines still go")
		assert.Len(t, h.Values("Authorization"), 1)
	}
	assert.Equal(t, []string{"Bearer one", "Bearer two", "Bearer two"}, got)
}

// mcpgate upstream refuses a credential fd that is not the gateway's
// socket.
func TestUpstreamCredentialFeedRefused(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	_, stderr, err := runWithEnv(t, nil, "upstream", "--name", "remote", "--url", "https://mcp.example.com/mcp", "--credential-fd", strconv.Itoa(int(f.Fd())))
	require.Error(t, err)
	assert.Contains(t, stderr+err.Error(), "is not the gateway's credential socket")
}
