package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzServerAnswers: whatever a server answers a request and a batch
// with (JSON or an event stream), what the bridge writes is one JSON-RPC
// answer per request, with the id the request spelled, and nothing for
// an id it did not send.
func FuzzServerAnswers(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7.0,"result":{}}`,
		`[{"jsonrpc":"2.0","id":7e0,"result":{}},{"jsonrpc":"2.0","id":"\u0061","result":{}},{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}]`,
		"{\"jsonrpc\":\"2.0\",\n\"id\":70E-1,\"result\":{}}",
		`{"jsonrpc":"2.0","id":8,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.mcpgate/requestId":7}}}`,
	} {
		f.Add(false, false, []byte(s))
		f.Add(true, true, []byte(s))
	}
	requests := []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`,
		`[{"jsonrpc":"2.0","id":7,"method":"tools/call"},{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
	}
	f.Fuzz(func(t *testing.T, sse, batch bool, answer []byte) {
		ct, body := "application/json", answer
		if sse {
			ct = "text/event-stream"
			var b bytes.Buffer
			for line := range bytes.Lines(answer) {
				b.WriteString("data: ")
				b.Write(bytes.TrimRight(line, "\r\n"))
				b.WriteString("\n\n")
			}
			body = b.Bytes()
		}
		req, want := requests[0], map[string]bool{"7": true}
		if batch {
			req, want = requests[1], map[string]bool{"7": true, `"a"`: true}
		}
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			io.Copy(io.Discard, r.Body)
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}},
				Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
		})}
		var out bytes.Buffer
		err := Run(context.Background(), strings.NewReader(req+"\n"), &out, Options{URL: "http://upstream.test/mcp", HTTPClient: client, Token: func(context.Context) (string, error) { return "t", nil }})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			var msgs []json.RawMessage
			if len(line) > 0 && line[0] == '[' {
				if err := json.Unmarshal(line, &msgs); err != nil {
					t.Fatalf("a line that is not a batch: %q", line)
				}
			} else {
				msgs = []json.RawMessage{line}
			}
			for _, m := range msgs {
				var a struct {
					ID     json.RawMessage `json:"id"`
					Method *string         `json:"method"`
				}
				if err := json.Unmarshal(m, &a); err != nil {
					t.Fatalf("a message that is not JSON: %q", m)
				}
				if a.Method != nil {
					continue // the server's own request or notification
				}
				id := string(bytes.TrimSpace(a.ID))
				if !want[id] {
					t.Fatalf("an answer for id %s, spelled otherwise or not sent: %q", id, line)
				}
				got[id]++
			}
		}
		for id := range want {
			if got[id] != 1 {
				t.Fatalf("id %s answered %d times; out:\n%s", id, got[id], out.String())
			}
		}
	})
}
