package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A gateway (or what answers in its place) that answers wrongly still
// leaves the client with exactly one answer per request: an answer for
// another id is not passed on (it would settle the client's other request
// with the wrong result), a second answer for one id neither, an id the
// server re-encodes ("\u0061" as "a", 1.0 as 1, 7 as 7.0) is still the
// request's and goes back spelled as the request spelled it (the gateway
// matches a worker's answer by the bytes of its id), and a batch whose answer lacks some of its requests gets errors for
// those.
func TestBridgeAnswersOnceWhateverTheServerSends(t *testing.T) {
	sse := func(events ...string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprintf(w, "data: %s\n\n", e)
			}
		}
	}
	jsonBody := func(body string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}
	cases := map[string]struct {
		send   string
		answer func(w http.ResponseWriter)
		want   map[string]string // id → "result" or "error", and nothing else
	}{
		"an answer for another id first": {
			send:   `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
			answer: sse(`{"jsonrpc":"2.0","id":2,"result":{"stolen":true}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`),
			want:   map[string]string{"1": "result"},
		},
		"only an answer for another id": {
			send:   `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
			answer: sse(`{"jsonrpc":"2.0","id":2,"result":{"stolen":true}}`),
			want:   map[string]string{"1": "error"},
		},
		"the answer twice": {
			send:   `{"jsonrpc":"2.0","id":"a","method":"tools/call"}`,
			answer: sse(`{"jsonrpc":"2.0","id":"a","result":{}}`, `{"jsonrpc":"2.0","id":"a","result":{"again":1}}`),
			want:   map[string]string{`"a"`: "result"},
		},
		"a string id with an escape, answered plainly": {
			send:   `{"jsonrpc":"2.0","id":"\u0061","method":"tools/list"}`,
			answer: jsonBody(`{"jsonrpc":"2.0","id":"a","result":{}}`),
			want:   map[string]string{`"\u0061"`: "result"},
		},
		"a number id 1.0, answered as 1": {
			send:   `{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}`,
			answer: jsonBody(`{"jsonrpc":"2.0","id":1,"result":{}}`),
			want:   map[string]string{"1.0": "result"},
		},
		"a number id 7, answered as 7.0 on a stream": {
			send:   `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`,
			answer: sse(`{"jsonrpc":"2.0","id":7.0,"result":{}}`),
			want:   map[string]string{"7": "result"},
		},
		"a batch answered with ids respelled, one twice": {
			send:   `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`,
			answer: jsonBody(`[{"jsonrpc":"2.0","id":1e0,"result":{}},{"jsonrpc":"2.0","id":"\u0062","result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]`),
			want:   map[string]string{"1": "result", `"b"`: "result", "3": "error"},
		},
		"a string id answered as a number": {
			send:   `{"jsonrpc":"2.0","id":"1","method":"tools/list"}`,
			answer: jsonBody(`{"jsonrpc":"2.0","id":1,"result":{}}`),
			want:   map[string]string{`"1"`: "error"},
		},
		"a batch answered in part": {
			send:   `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
			answer: jsonBody(`[{"jsonrpc":"2.0","id":1,"result":{}}]`),
			want:   map[string]string{"1": "result", "2": "error"},
		},
		"a batch answered twice for one id": {
			send:   `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
			answer: jsonBody(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]`),
			want:   map[string]string{"1": "result", "2": "error"},
		},
		"an answer to a notification": {
			send:   `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
			answer: jsonBody(`{"jsonrpc":"2.0","id":1,"result":{}}`),
			want:   map[string]string{},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				c.answer(w)
			}))
			defer ts.Close()
			got := map[string]string{}
			for _, line := range runLines(t, Options{URL: ts.URL}, c.send) {
				var msgs []json.RawMessage
				if strings.HasPrefix(line, "[") {
					require.NoError(t, json.Unmarshal([]byte(line), &msgs), line)
				} else {
					msgs = []json.RawMessage{json.RawMessage(line)}
				}
				for _, m := range msgs {
					var a struct {
						ID     json.RawMessage `json:"id"`
						Result json.RawMessage `json:"result"`
					}
					require.NoError(t, json.Unmarshal(m, &a), line)
					kind := "error"
					if a.Result != nil {
						kind = "result"
					}
					id := string(a.ID)
					require.NotContains(t, got, id, "a second answer for id %s: %s", id, line)
					got[id] = kind
				}
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// The session's standalone stream carries the server's own requests and
// notifications; an answer there (the bridge resumes no stream) is one
// the client did not ask for on it, and is not passed on: the request's
// answer comes on its POST.
func TestBridgeDropsAnswersOnTheStandaloneStream(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stray\":true}}\n\n")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodDelete:
		default:
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.NewDecoder(r.Body).Decode(&m)
			if m.ID == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("MCP-Session-Id", "s1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25"}}`, m.ID)
		}
	}))
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{URL: ts.URL, Token: func(context.Context) (string, error) { return "t", nil }})
		outW.Close()
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
	out := bufio.NewScanner(outR)
	var lines []string
	for out.Scan() {
		lines = append(lines, out.Text())
		if strings.Contains(out.Text(), "list_changed") {
			break
		}
	}
	inW.Close()
	for out.Scan() {
		lines = append(lines, out.Text())
	}
	require.NoError(t, <-done)
	require.Len(t, lines, 2, "the initialize answer and the notification: %q", lines)
	assert.NotContains(t, strings.Join(lines, "\n"), "stray")
}
