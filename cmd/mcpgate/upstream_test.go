package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// remote is a remote MCP server for mcpgate upstream: the go-sdk's
// Streamable HTTP handler with a few tools, behind a front that records
// what reached it and answers some tools as a hostile or broken server
// would.
type remote struct {
	url       string
	port      string
	legacy    bool // refuses MCP 2026-07-28, as a 2025-11-25 server does
	h         http.Handler
	elsewhere *httptest.Server // the host the redirect points to
	release   chan struct{}    // ends the hanging answers

	mu       sync.Mutex
	auth     []string // Authorization of each POST
	reached  int      // requests that reached elsewhere
	deleted  chan string
	versions map[string]int // MCP-Protocol-Version of each POST
}

// hostileTools answer in the front, not in the server.
var hostileTools = []string{"hang", "stall", "garbage_json", "garbage_sse", "garbage_lines", "reset", "wrong_type", "redirect", "float_id"}

func startRemote(t *testing.T, legacy bool) *remote {
	t.Helper()
	rm := &remote{legacy: legacy, release: make(chan struct{}), deleted: make(chan string, 16), versions: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	type text struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in text) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		h := req.Extra.Header
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
			Text: "authorization=" + h.Get("Authorization") + " key=" + h.Get("X-Api-Key")}}}, nil, nil
	})
	var cmu sync.Mutex
	counts := map[string]int{}
	mcp.AddTool(srv, &mcp.Tool{Name: "count"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		cmu.Lock()
		defer cmu.Unlock()
		sid := req.Session.ID()
		counts[sid]++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s:%d", sid, counts[sid])}}}, nil, nil
	})
	for _, name := range hostileTools {
		mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the front answers " + name}}}, nil, nil
		})
	}
	// The go-sdk serves MCP 2026-07-28 in its stateless mode; with
	// sessions it is a 2025-11-25 server, as the front makes it plain.
	rm.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: !legacy, JSONResponse: legacy})
	rm.elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.mu.Lock()
		rm.reached++
		rm.mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}))
	ts := httptest.NewServer(rm)
	t.Cleanup(func() {
		close(rm.release)
		ts.Close()
		rm.elsewhere.Close()
	})
	rm.url = ts.URL + "/mcp"
	u, _ := url.Parse(ts.URL)
	rm.port = u.Port()
	return rm
}

func (rm *remote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		rm.deleted <- r.Header.Get("MCP-Session-Id")
	}
	if r.Method != http.MethodPost {
		rm.h.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &m)
	rm.mu.Lock()
	rm.auth = append(rm.auth, r.Header.Get("Authorization"))
	rm.versions[m.Method+"@"+r.Header.Get("MCP-Protocol-Version")]++
	rm.mu.Unlock()
	if rm.legacy && r.Header.Get("MCP-Protocol-Version") == "2026-07-28" {
		http.Error(w, "Bad Request: Unsupported protocol version", http.StatusBadRequest)
		return
	}
	if m.Method != "tools/call" || !rm.hostile(w, r, m.Params.Name) {
		rm.h.ServeHTTP(w, r)
	}
}

// hostile answers tool as a broken server would; false for a tool of the
// server's own.
func (rm *remote) hostile(w http.ResponseWriter, r *http.Request, tool string) bool {
	const garbage = 50 << 20
	chunk := bytes.Repeat([]byte("#garbage"), 8<<10)
	flush := func() { w.(http.Flusher).Flush() }
	switch tool {
	case "hang": // no answer at all
		select {
		case <-r.Context().Done():
		case <-rm.release:
		}
	case "stall": // an answer begun, then silence
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		flush()
		select {
		case <-r.Context().Done():
		case <-rm.release:
		}
	case "garbage_json": // 50 MiB of it as application/json
		w.Header().Set("Content-Type", "application/json")
		for n := 0; n < garbage; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
	case "garbage_sse": // 50 MiB of events that are not JSON-RPC
		w.Header().Set("Content-Type", "text/event-stream")
		event := []byte("data: " + string(chunk[:1000]) + "\n\n")
		for n := 0; n < garbage; n += len(event) {
			if _, err := w.Write(event); err != nil {
				break
			}
		}
	case "garbage_lines": // one event of 50 MiB in short data lines
		w.Header().Set("Content-Type", "text/event-stream")
		line := []byte("data: " + string(chunk[:1000]) + "\n")
		for n := 0; n < garbage; n += len(line) {
			if _, err := w.Write(line); err != nil {
				break
			}
		}
	case "reset": // the connection cut in the middle of the stream
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"par")
		flush()
		panic(http.ErrAbortHandler)
	case "wrong_type":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Sign in to continue</body></html>")
	case "redirect":
		http.Redirect(w, r, rm.elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	case "float_id": // the request's id spelled as another number of equal value: 7 as 7.0
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s.0,"result":{"content":[{"type":"text","text":"float"}]}}`, req.ID)
	default:
		return false
	}
	return true
}

// upstreamGateway runs the gateway with `mcpgate upstream` (this test
// binary) as its worker, relaying to rm, confined by the external
// sandbox profile with rm's ports open.
func upstreamGateway(t *testing.T, rm *remote, headers string) (g *tlsGateway, headersFile string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exe + " upstream --name remote --url " + rm.url + " --response-timeout 5s --idle-timeout 5s"
	if headers != "" {
		headersFile = filepath.Join(dir, "remote.headers")
		require.NoError(t, os.WriteFile(headersFile, []byte(headers), 0o600))
		cmd += " --headers-file " + headersFile
	}
	u, _ := url.Parse(rm.elsewhere.URL)
	return startTLSGateway(t, map[string]string{
		"MCPGATE_WORKER_COMMAND":            cmd,
		"MCPGATE_WORKER_SANDBOX_CONNECT":    rm.port + "," + u.Port(),
		"MCPGATE_WORKER_SANDBOX_READ_PATHS": dir,
	}), headersFile
}

func callErr(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) error {
	t.Helper()
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	return err
}

// TestUpstreamThroughGateway drives a remote server through the gateway
// with mcpgate upstream as its worker, with the go-sdk client on both
// protocol generations, each relayed on its own: the tools pass through,
// the remote server sees the headers file's credential and never the
// client's token, and a rewritten headers file takes effect on the next
// request.
func TestUpstreamThroughGateway(t *testing.T) {
	rm := startRemote(t, false)
	g, headersFile := upstreamGateway(t, rm, "# the remote server's key\nAuthorization: Bearer upstream-secret\nX-Api-Key: k1\n")
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs := g.connectVersion(t, &tok, version)
			assert.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			names := toolNames(t, cs)
			assert.True(t, names["echo"] && names["whoami"], "%v", names)
			assert.Equal(t, "over there", callText(t, cs, "echo", map[string]any{"text": "over there"}))
			who := callText(t, cs, "whoami", nil)
			assert.Equal(t, "authorization=Bearer upstream-secret key=k1", who)
			assert.NotContains(t, who, tok)
		})
	}
	rm.mu.Lock()
	for _, a := range rm.auth {
		assert.Equal(t, "Bearer upstream-secret", a, "every request carries the file's credential, none the client's")
	}
	assert.Positive(t, rm.versions["tools/call@2026-07-28"], "2026-07-28 went upstream as 2026-07-28: %v", rm.versions)
	assert.Positive(t, rm.versions["tools/call@2025-11-25"], "and 2025-11-25 as 2025-11-25: %v", rm.versions)
	rm.mu.Unlock()

	t.Run("a rewritten headers file takes effect on the next request", func(t *testing.T) {
		cs := g.connect(t, &tok)
		tmp := headersFile + ".new"
		require.NoError(t, os.WriteFile(tmp, []byte("Authorization: Bearer rotated\nX-Api-Key: k2\n"), 0o600))
		require.NoError(t, os.Rename(tmp, headersFile))
		assert.Equal(t, "authorization=Bearer rotated key=k2", callText(t, cs, "whoami", nil))
	})

}

// TestUpstreamSessionPerUser: a remote server that speaks only
// 2025-11-25 gets a session of its own for each user's worker (the
// gateway holds the handshake for its 2026-07-28 clients), never one
// shared, and no Authorization when no headers file gives one; a client
// session's end ends its remote session.
func TestUpstreamSessionPerUser(t *testing.T) {
	rm := startRemote(t, true)
	g, _ := upstreamGateway(t, rm, "")
	alice, bob := g.token(t, "alice", "mcp:use", "mcp:write"), g.token(t, "bob", "mcp:use", "mcp:write")
	a1, a2, b := g.connect(t, &alice), g.connect(t, &alice), g.connect(t, &bob)
	assert.Equal(t, "2026-07-28", a1.InitializeResult().ProtocolVersion, "the gateway translates")

	sa, n1, _ := strings.Cut(callText(t, a1, "count", nil), ":")
	sa2, n2, _ := strings.Cut(callText(t, a2, "count", nil), ":")
	sb, nb, _ := strings.Cut(callText(t, b, "count", nil), ":")
	require.NotEmpty(t, sa, "the remote server has sessions")
	assert.Equal(t, sa, sa2, "one user's clients share the user's worker and its session")
	assert.Equal(t, []string{"1", "2"}, []string{n1, n2})
	assert.NotEqual(t, sa, sb, "another user has a session of their own")
	assert.Equal(t, "1", nb)
	assert.Equal(t, "authorization= key=", callText(t, b, "whoami", nil), "no headers file: no credential")
	rm.mu.Lock()
	for _, a := range rm.auth {
		assert.Empty(t, a, "the client's token never goes upstream")
	}
	assert.Zero(t, rm.versions["tools/call@2026-07-28"], "the gateway translated: %v", rm.versions)
	rm.mu.Unlock()
	t.Run("a client session's end ends the remote session", func(t *testing.T) {
		cs := g.connectSession(t, &alice)
		sid, _, _ := strings.Cut(callText(t, cs, "count", nil), ":")
		require.NotEmpty(t, sid)
		require.NoError(t, cs.Close())
		deadline := time.After(30 * time.Second)
		for got := ""; got != sid; {
			select {
			case got = <-rm.deleted: // other sessions' ends may come first
			case <-deadline:
				t.Fatal("the remote session was not ended (no DELETE)")
			}
		}
	})
}

// TestUpstreamHostile: a remote server that hangs, stalls, sends 50 MiB
// of garbage, cuts the connection, answers HTML or redirects fails that
// one request with a JSON-RPC error naming the server; a request running
// beside it is answered, the worker serves the next one, and the
// redirect's target is never asked.
func TestUpstreamHostile(t *testing.T) {
	rm := startRemote(t, false)
	g, _ := upstreamGateway(t, rm, "X-Api-Key: k1\n")
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	cases := map[string]string{
		"hang":          "did not answer in time",
		"stall":         "sent nothing for 5s in the middle of its answer",
		"garbage_json":  "an answer over the size limit",
		"garbage_sse":   "not JSON-RPC",
		"garbage_lines": "an answer over the size limit",
		"reset":         "without answering this request",
		"wrong_type":    "Content-Type text/html",
		"redirect":      "redirects (307) to " + rm.elsewhere.URL,
	}
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs := g.connectVersion(t, &tok, version)
			toolNames(t, cs)
			for tool, want := range cases {
				t.Run(tool, func(t *testing.T) {
					// The bad answer fails only its own request: one
					// beside it is answered while it lasts.
					errc := make(chan error, 1)
					go func() { errc <- callErr(t, cs, tool, nil) }()
					assert.Equal(t, "beside", callText(t, cs, "echo", map[string]any{"text": "beside"}))
					err := <-errc
					require.Error(t, err)
					assert.Contains(t, err.Error(), `remote server "remote"`)
					assert.Contains(t, err.Error(), want)
					assert.NotContains(t, err.Error(), "k1")
					assert.Equal(t, "after", callText(t, cs, "echo", map[string]any{"text": "after"}), "the worker serves the next request")
				})
			}
		})
	}
	rm.mu.Lock()
	assert.Zero(t, rm.reached, "the redirect was not followed")
	rm.mu.Unlock()
}

// TestUpstreamAnswerIDRespelled: a remote server that answers a request
// with its id spelled otherwise (7.0 for 7, as a server that reads every
// number as a float may) still answers that request: the client gets the
// answer, rather than waiting for one the gateway could not match.
func TestUpstreamAnswerIDRespelled(t *testing.T) {
	rm := startRemote(t, false)
	g, _ := upstreamGateway(t, rm, "")
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs := g.connectVersion(t, &tok, version)
			// Bounded: before the fix the answer never came.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "float_id"})
			require.NoError(t, err)
			require.Len(t, res.Content, 1)
			assert.Equal(t, "float", res.Content[0].(*mcp.TextContent).Text)
		})
	}
}
