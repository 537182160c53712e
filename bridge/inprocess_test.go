package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

type connTag struct{}

// echoHandler answers each JSON-RPC request with what the handler was
// told of it; "stream" streams a notification first, "big" answers
// 200 KB, "boom" panics.
func echoHandler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		require.NoError(t, err)
		if !m.IsRequest() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		tag, _ := r.Context().Value(connTag{}).(string)
		result := map[string]any{"conn": tag, "remote": r.RemoteAddr, "path": r.URL.Path, "host": r.Host,
			"uri": r.RequestURI, "method": r.Header.Get("Mcp-Method")}
		switch m.Method {
		case "boom":
			panic("boom")
		case "big":
			result["pad"] = strings.Repeat("x", 200<<10)
		case "stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"first"}}`)
			w.(http.Flusher).Flush()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
			fmt.Fprintf(w, "data: %s\n\n", b)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	})
}

// TestHandlerTransport: the bridge with a HandlerTransport reaches the
// handler in-process as a server would be reached: a path, the host, the
// connection's values and address, the protocol's headers; a streamed
// answer arrives in order, a large one whole, and a handler that panics
// fails its request with an answer, not the process.
func TestHandlerTransport(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := &HandlerTransport{Handler: echoHandler(t), Conn: context.WithValue(context.Background(), connTag{}, "c1"), RemoteAddr: "uid:1000"}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{URL: "http://localhost/mcp/db", HTTPClient: &http.Client{Transport: tr}})
		outW.Close()
	}()
	r := bufio.NewReader(outR)
	call := func(line string, id int) (answer map[string]any, before []string) {
		t.Helper()
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
		for {
			l, err := r.ReadString('\n')
			require.NoError(t, err)
			var a map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &a), l)
			if a["id"] == float64(id) {
				return a, before
			}
			before = append(before, strings.TrimSpace(l))
		}
	}

	a, _ := call(`{"jsonrpc":"2.0","id":1,"method":"who"}`, 1)
	assert.Equal(t, map[string]any{"conn": "c1", "remote": "uid:1000", "path": "/mcp/db", "host": "localhost", "uri": "/mcp/db", "method": "who"}, a["result"])

	a, before := call(`{"jsonrpc":"2.0","id":2,"method":"stream"}`, 2)
	assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"first"}}`}, before)
	assert.Equal(t, "c1", a["result"].(map[string]any)["conn"])

	a, _ = call(`{"jsonrpc":"2.0","id":3,"method":"big"}`, 3)
	assert.Len(t, a["result"].(map[string]any)["pad"], 200<<10)

	a, _ = call(`{"jsonrpc":"2.0","id":4,"method":"boom"}`, 4)
	assert.NotNil(t, a["error"], "a request whose handler panicked is answered")
	a, _ = call(`{"jsonrpc":"2.0","id":5,"method":"who"}`, 5)
	assert.NotNil(t, a["result"], "and the bridge goes on")

	inW.Close()
	require.NoError(t, <-done)
}
