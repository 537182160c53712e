package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// server is a small Streamable HTTP server (2025-11-25) that can forget
// its sessions, as a restarted gateway does, and refuse a stale token.
type server struct {
	mu       sync.Mutex
	sessions int
	current  string
	token    string
	inits    int
	headers  []http.Header
	deleted  []string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodDelete {
		s.deleted = append(s.deleted, r.Header.Get("MCP-Session-Id"))
		return
	}
	if r.Method == http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.NewDecoder(r.Body).Decode(&m)
	s.headers = append(s.headers, r.Header.Clone())
	if m.Method == "initialize" {
		s.sessions++
		s.inits++
		s.current = fmt.Sprintf("s%d", s.sessions)
		w.Header().Set("MCP-Session-Id", s.current)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": %s,\n  \"result\": {\"protocolVersion\": \"2025-11-25\"}\n}\n", m.ID)
		return
	}
	if r.Header.Get("MCP-Session-Id") != s.current || s.current == "" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch m.Method {
	case "tools/list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"q","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}`, m.ID)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": ok\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", m.ID)
	}
}

func TestBridgePassesThroughAndSurvivesARestart(t *testing.T) {
	s := &server{token: "t1"}
	ts := httptest.NewServer(s)
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var mu sync.Mutex
	tok, refreshes := "t0", 0 // the first token is stale: 401, refresh
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{URL: ts.URL,
			Token: func(context.Context) (string, error) { mu.Lock(); defer mu.Unlock(); return tok, nil },
			Refresh: func(context.Context) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				refreshes++
				tok = "t1"
				return tok, nil
			}})
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	send := func(line string) { _, err := io.WriteString(inW, line+"\n"); require.NoError(t, err) }
	next := func() string { require.True(t, out.Scan()); return out.Text() }

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`, next(), "a pretty-printed answer arrives on one line")
	assert.Equal(t, 1, refreshes, "a 401 refreshed the token once")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	assert.Contains(t, next(), `"x-mcp-header":"Region"`)

	s.mu.Lock()
	s.current = "" // the gateway restarted
	s.mu.Unlock()
	send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"q","arguments":{"region":"eu west"}}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, next(), "SSE messages pass through untouched")
	assert.Equal(t, `{"jsonrpc":"2.0","id":"c","result":{"content":[]}}`, next())
	inW.Close()
	require.NoError(t, <-done)

	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, 2, s.inits, "a new session after the restart")
	last := s.headers[len(s.headers)-1]
	assert.Equal(t, "s2", last.Get("MCP-Session-Id"))
	assert.Equal(t, "2025-11-25", last.Get("MCP-Protocol-Version"))
	assert.Equal(t, "tools/call", last.Get("Mcp-Method"))
	assert.Equal(t, "q", last.Get("Mcp-Name"))
	assert.Equal(t, "eu west", last.Get("Mcp-Param-Region"), "the x-mcp-header argument is mirrored")
	assert.Equal(t, []string{"s2"}, s.deleted, "the session is ended when stdin closes")
}

func TestEncodeValue(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		assert.Equal(t, want, encodeValue(in), in)
	}
}

func TestBridgeAnswersWhatTheServerDoesNot(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		Run(context.Background(), inR, outW, Options{URL: ts.URL, Token: func(context.Context) (string, error) { return "t", nil }})
		outW.Close()
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`+"\n")
	out := bufio.NewScanner(outR)
	require.True(t, out.Scan())
	var m struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &m))
	assert.Equal(t, 7, m.ID, "the client gets an answer instead of waiting forever")
	assert.Contains(t, m.Error.Message, "502")
	inW.Close()
}

// A 403 insufficient_scope (a step-up) and a 401 that a refresh cannot
// cure both log in again through Reauthorize, once for the requests
// refused together, and the request is sent again with the new token.
func TestBridgeReauthorizes(t *testing.T) {
	for name, refusal := range map[string]func(w http.ResponseWriter){
		"insufficient_scope": func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:use mcp:write"`)
			w.WriteHeader(http.StatusForbidden)
		},
		"invalid_token": func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer fresh" {
					refusal(w)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			}))
			defer ts.Close()
			var mu sync.Mutex
			tok, logins, scopes := "stale", 0, ""
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			go func() {
				Run(context.Background(), inR, outW, Options{URL: ts.URL,
					Token:   func(context.Context) (string, error) { mu.Lock(); defer mu.Unlock(); return tok, nil },
					Refresh: func(context.Context) (string, error) { return "", errors.New("invalid_grant") },
					Reauthorize: func(_ context.Context, scope string) (string, error) {
						mu.Lock()
						defer mu.Unlock()
						logins++
						scopes, tok = scope, "fresh"
						return tok, nil
					}})
				outW.Close()
			}()
			io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
			out := bufio.NewScanner(outR)
			require.True(t, out.Scan())
			assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, out.Text())
			inW.Close()
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, 1, logins)
			if name == "insufficient_scope" {
				assert.Equal(t, "mcp:use mcp:write", scopes, "the login asks for the scope the challenge names")
			}
		})
	}
}

// A 403 is a step-up only when its Bearer challenge's error is
// insufficient_scope: the words in a description, or in another scheme's
// challenge, do not make the bridge log the user in again (a login asking
// for the scope a hostile server named).
func TestBridgeStepUpOnlyOnTheBearerError(t *testing.T) {
	for name, challenge := range map[string][]string{
		"in the description":     {`Bearer error="invalid_token", error_description="insufficient_scope", scope="admin"`},
		"in another scheme":      {`Basic error="insufficient_scope", scope="admin", Bearer error="access_denied"`},
		"in another header line": {`Basic realm="x", error="insufficient_scope"`, `Bearer error="access_denied"`},
		"quoted inside a value":  {`Bearer error_description="x, error=insufficient_scope"`},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for _, c := range challenge {
					w.Header().Add("WWW-Authenticate", c)
				}
				w.WriteHeader(http.StatusForbidden)
			}))
			defer ts.Close()
			var mu sync.Mutex
			logins := 0
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			go func() {
				Run(context.Background(), inR, outW, Options{URL: ts.URL,
					Token: func(context.Context) (string, error) { return "tok", nil },
					Reauthorize: func(context.Context, string) (string, error) {
						mu.Lock()
						defer mu.Unlock()
						logins++
						return "tok2", nil
					}})
				outW.Close()
			}()
			io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
			out := bufio.NewScanner(outR)
			require.True(t, out.Scan())
			assert.Contains(t, out.Text(), `"id":1`)
			assert.Contains(t, out.Text(), "403")
			inW.Close()
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, 0, logins, "a 403 without the Bearer insufficient_scope error is no step-up")
		})
	}
}
