package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runLines runs the bridge against url with the client's lines on stdin
// until stdin ends, and returns every line it wrote to stdout.
func runLines(t *testing.T, o Options, lines ...string) []string {
	t.Helper()
	if o.Token == nil {
		o.Token = func(context.Context) (string, error) { return "t", nil }
	}
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), strings.NewReader(strings.Join(lines, "\n")+"\n"), outW, o)
		outW.Close()
	}()
	var got []string
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	require.NoError(t, <-done)
	return got
}

type answer struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int         `json:"code"`
		Message string      `json:"message"`
		Data    refusalData `json:"data"`
	} `json:"error"`
}

func decodeAnswer(t *testing.T, line string) answer {
	t.Helper()
	var a answer
	require.NoError(t, json.Unmarshal([]byte(line), &a), line)
	return a
}

// Every way a gateway (or a proxy in front of it) can refuse a request
// reaches the client as exactly one JSON-RPC answer for that request,
// initialize included, with the status, the challenge and what to do in
// error.data; a notification refused the same way gets no answer; the
// server's own JSON-RPC error passes through as it is.
func TestBridgeAnswersEveryRefusalOnce(t *testing.T) {
	type shape struct {
		status    int
		ct        string
		challenge string
		body      string // %s is the request's id
		hint      string // in error.data.hint
		oauth     string // error.data.error
		passed    bool   // the body is the answer
	}
	shapes := map[string]shape{
		"403 insufficient_scope, OAuth JSON": {status: 403, ct: "application/json",
			challenge: `Bearer error="insufficient_scope", scope="mcp:use mcp:write", resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp"`,
			body:      `{"error":"insufficient_scope","error_description":"the token lacks mcp:write"}`,
			hint:      "--scope mcp:write", oauth: "insufficient_scope"},
		"401 after a refresh, OAuth JSON": {status: 401, ct: "application/json",
			challenge: `Bearer error="invalid_token", error_description="token issuer not trusted"`,
			body:      `{"error":"invalid_token","error_description":"token issuer not trusted"}`,
			hint:      "mcpgate login --url", oauth: "invalid_token"},
		"503, JSON":                  {status: 503, ct: "application/json", body: `{"error":"overloaded"}`, hint: "try again later", oauth: "overloaded"},
		"502, HTML":                  {status: 502, ct: "text/html", body: `<html><body><h1>502 Bad Gateway</h1></body></html>`, hint: "try again later"},
		"500, empty":                 {status: 500, ct: "", body: ``, hint: "try again later"},
		"200, JSON but not JSON-RPC": {status: 200, ct: "application/json", body: `{"ok":true}`, hint: "send the request again"},
		"202 to a request":           {status: 202, ct: "", body: ``, hint: "send the request again"},
		"400, a JSON-RPC error": {status: 400, ct: "application/json",
			body: `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad params"}}`, passed: true},
	}
	requests := map[string]string{
		"initialize": `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		"tools/call": `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"q","arguments":{}}}`,
	}
	for name, sh := range shapes {
		for method, req := range requests {
			t.Run(name+"/"+method, func(t *testing.T) {
				var id json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(req), &struct {
					ID *json.RawMessage `json:"id"`
				}{&id}))
				ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					var m struct {
						ID json.RawMessage `json:"id"`
					}
					json.NewDecoder(r.Body).Decode(&m)
					if sh.challenge != "" {
						w.Header().Set("WWW-Authenticate", sh.challenge)
					}
					if sh.ct != "" {
						w.Header().Set("Content-Type", sh.ct)
					}
					w.WriteHeader(sh.status)
					body := sh.body
					if strings.Contains(body, "%s") {
						body = fmt.Sprintf(body, m.ID)
					}
					io.WriteString(w, body)
				}))
				defer ts.Close()
				var refreshes atomic.Int32 // the request and the notification refresh on their own
				got := runLines(t, Options{URL: ts.URL,
					Refresh: func(context.Context) (string, error) { refreshes.Add(1); return "t2", nil }},
					req, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				require.Len(t, got, 1, "one answer for the request, none for the notification: %q", got)
				a := decodeAnswer(t, got[0])
				assert.JSONEq(t, string(id), string(a.ID))
				if sh.passed {
					assert.JSONEq(t, fmt.Sprintf(sh.body, id), got[0], "the server's JSON-RPC answer passes through")
					return
				}
				assert.Equal(t, -32603, a.Error.Code)
				assert.Contains(t, a.Error.Message, fmt.Sprint(sh.status))
				assert.Equal(t, sh.status, a.Error.Data.Status)
				assert.Equal(t, sh.challenge, a.Error.Data.Challenge)
				assert.Equal(t, sh.oauth, a.Error.Data.Error)
				assert.Contains(t, a.Error.Data.Hint, sh.hint)
				assert.NotContains(t, got[0], "Bearer t", "no token in the answer")
				if sh.status == 401 {
					assert.Positive(t, refreshes.Load(), "the token was refreshed before giving up")
				}
			})
		}
	}
}

// An unreachable gateway or a token that can no longer be refreshed also
// ends in one answer.
func TestBridgeAnswersWhenItCannotSend(t *testing.T) {
	got := runLines(t, Options{URL: "http://127.0.0.1:1/mcp",
		Token: func(context.Context) (string, error) { return "", errors.New("the cached login has expired") }},
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Len(t, got, 1)
	a := decodeAnswer(t, got[0])
	assert.JSONEq(t, "3", string(a.ID))
	assert.Contains(t, a.Error.Message, "the cached login has expired")
	assert.Contains(t, a.Error.Data.Hint, "mcpgate login")
}

// A message over the limit fails that request (or, for a notification,
// is dropped) and the bridge goes on with the next; an answer over the
// limit fails its request instead of reaching the client cut short.
func TestBridgeRefusesOneMessageOverTheLimit(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		switch m.Method {
		case "tools/list": // an answer over the limit, as JSON
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"pad":"%s"}}`, m.ID, strings.Repeat("x", 2048))
		case "resources/list": // and as an SSE event
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"pad\":\"%s\"}}\n\n", m.ID, strings.Repeat("x", 2048))
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
		}
	}))
	defer ts.Close()
	big := strings.Repeat("y", 4096)
	got := runLines(t, Options{URL: ts.URL, MaxMessageBytes: 1024},
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"q","arguments":{"blob":"`+big+`"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"blob":"`+big+`"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	byID := map[string]string{}
	for _, l := range got {
		byID[string(decodeAnswer(t, l).ID)] = l
	}
	require.Len(t, got, 5, "%q", got)
	a := decodeAnswer(t, byID["5"])
	assert.Equal(t, -32600, a.Error.Code)
	assert.Contains(t, a.Error.Message, "over the limit of 1024 bytes")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, byID["6"], "the bridge goes on after the long message")
	assert.Contains(t, decodeAnswer(t, byID["7"]).Error.Message, "too large")
	assert.Contains(t, decodeAnswer(t, byID["8"]).Error.Message, "too large", "%q", got)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":9,"result":{}}`, byID["9"])
}

// FuzzLeadingMembers: the id found in a message cut anywhere is the id of
// the whole message or nothing, and never a panic.
func FuzzLeadingMembers(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"q"}}`), 40)
	f.Add([]byte(`{"id":"a\"b","method":"x"}`), 9)
	f.Add([]byte(`{"params":{"x":[1,2,{"id":3}]},"id":4}`), 20)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), 30)
	f.Add([]byte(`{"id":1,"ID":2,"method":"x"}`), 27)
	f.Add([]byte(`{"id":12,"method":"x"}`), 7)
	f.Fuzz(func(t *testing.T, msg []byte, cut int) {
		var whole struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(msg, &whole) != nil || cut < 0 {
			return
		}
		cut = min(cut, len(msg))
		id, _, _ := leadingMembers(msg[:cut])
		if id == nil {
			return
		}
		var a, b any
		require.NoError(t, json.Unmarshal(id, &a))
		if idMembersAfter(msg, cut) {
			// A later duplicate decides the whole message's id, and a reader
			// that sees only the prefix cannot know it.
			return
		}
		if json.Unmarshal(whole.ID, &b) == nil {
			assert.Equal(t, b, a, "the id of a cut message is the id of the whole")
		}
	})
}

// idMembersAfter tells whether msg, a JSON object, has a top-level member
// whose name folds to "id" and whose value ends within msg[:cut], followed by
// another such member that does not.
func idMembersAfter(msg []byte, cut int) bool {
	within := false
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil {
		return false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
		if name, _ := k.(string); strings.EqualFold(name, "id") {
			if dec.InputOffset() > int64(cut) {
				return within
			}
			within = true
		}
	}
	return false
}
