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
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An SSE answer of many short data lines and no blank line is one event:
// it is bounded as a whole, not only line by line, and fails its request
// as too large instead of growing without bound.
func TestBridgeBoundsAnEventOfManyLines(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		line := "data: " + strings.Repeat("x", 100) + "\n"
		for range 10 << 10 { // 1 MiB in all, the limit 64 KiB
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	got := runLines(t, Options{URL: ts.URL, MaxMessageBytes: 64 << 10}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q"}}`)
	require.Len(t, got, 1)
	a := decodeAnswer(t, got[0])
	assert.Contains(t, a.Error.Message, "too large")
}

// An answer that is an endless run of events that are not JSON-RPC fails
// its request once a few have come, rather than being read to its end; a
// stream cut inside an event does not dispatch the half event.
func TestBridgeStopsReadingGarbage(t *testing.T) {
	var mu sync.Mutex
	written := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "text/event-stream")
		if string(m.ID) == "2" { // a whole answer, cut before its blank line
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n")
			return
		}
		for range 1 << 20 {
			n, err := io.WriteString(w, "data: <html>\n\n")
			mu.Lock()
			written += n
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	got := runAnswered(t, Options{URL: ts.URL, Server: "remote"}, 2,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"q"}}`)
	byID := map[string]answer{}
	for _, l := range got {
		a := decodeAnswer(t, l)
		byID[string(a.ID)] = a
	}
	assert.Contains(t, byID["1"].Error.Message, `the remote server "remote" answered with data that is not JSON-RPC`)
	assert.Contains(t, byID["2"].Error.Message, "without answering this request", "half an event is no answer")
	mu.Lock()
	defer mu.Unlock()
	assert.Less(t, written, 14<<20, "the bridge stopped reading long before the end")
}

// notifications/cancelled closes the cancelled request's stream, which
// gets no answer; without a session (MCP 2026-07-28) the notification
// itself does not go to the server, which has no use for it.
func TestBridgeCancelClosesTheStream(t *testing.T) {
	closed := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	var methods []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		methods = append(methods, m.Method)
		mu.Unlock()
		if m.Method == "tools/call" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			close(started)
			<-r.Context().Done()
			close(closed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	}))
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{URL: ts.URL})
		outW.Close()
	}()
	var out []byte
	read := make(chan struct{})
	go func() { out, _ = io.ReadAll(outR); close(read) }()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow",`+meta+`}}`+"\n")
	<-started
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`+"\n")
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled request's stream stayed open")
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":8,"method":"ping","params":{`+meta+`}}`+"\n")
	inW.Close()
	require.NoError(t, <-done)
	<-read
	assert.Equal(t, `{"jsonrpc":"2.0","id":8,"result":{}}`+"\n", string(out), "no answer for the cancelled request")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"tools/call", "ping"}, methods, "the notification stayed here")
}

// The gateway's worker for a remote server (Options.Server) sends no
// Authorization of its own and only the headers given; when its input
// ends it cancels what is in flight (the gateway waits for no answer)
// and ends the session.
func TestUpstreamEndsAtEOF(t *testing.T) {
	deleted := make(chan http.Header, 1)
	var seen []http.Header
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		switch r.Method {
		case http.MethodDelete:
			deleted <- r.Header.Clone()
			return
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		switch m.Method {
		case "initialize":
			w.Header().Set("MCP-Session-Id", "s1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25"}}`, m.ID)
		case "tools/call": // hangs until the relay gives up on it
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer ts.Close()
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, io.Discard, Options{URL: ts.URL, Server: "remote",
			Header: func() (http.Header, error) { return http.Header{"X-Api-Key": {"k1"}}, nil }})
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang"}}`+"\n")
	inW.Close()
	select {
	case h := <-deleted:
		assert.Equal(t, "s1", h.Get("MCP-Session-Id"))
	case <-time.After(30 * time.Second):
		t.Fatal("no DELETE after stdin ended")
	}
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	for _, h := range seen {
		assert.Empty(t, h.Get("Authorization"))
		assert.Equal(t, "k1", h.Get("X-Api-Key"))
	}
}

// runAnswered runs the bridge with lines on stdin, and ends stdin once n
// lines came out: the gateway's worker (Options.Server) cancels what is
// in flight when its input ends.
func runAnswered(t *testing.T, o Options, n int, lines ...string) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, o)
		outW.Close()
	}()
	go io.WriteString(inW, strings.Join(lines, "\n")+"\n")
	sc := bufio.NewScanner(outR)
	var got []string
	for len(got) < n && sc.Scan() {
		got = append(got, sc.Text())
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	require.NoError(t, <-done)
	require.Len(t, got, n)
	return got
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Options.ResponseTimeout fails a request whose answer has not begun in
// time, naming the wait, while a subscriptions/listen stream, which a
// server may begin with its first notification, waits on.
func TestUpstreamResponseTimeoutSparesListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			select {
			case <-release:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			body := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
			return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Request: r,
				Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
		})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- Run(context.Background(), inR, outW, Options{URL: "http://remote.test/mcp", Server: "remote",
				HTTPClient: &http.Client{Transport: rt}, ResponseTimeout: time.Minute})
			outW.Close()
		}()
		lines := make(chan string, 4)
		go func() {
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{}}}`+"\n")
		io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`+"\n")
		a := decodeAnswer(t, <-lines)
		assert.JSONEq(t, "2", string(a.ID))
		assert.Equal(t, `mcpgate upstream: the remote server "remote" did not answer in time: no answer within 1m0s`, a.Error.Message)
		time.Sleep(time.Hour) // the listen stream is still waiting
		close(release)
		assert.Contains(t, <-lines, "notifications/tools/list_changed", "the listen stream began late, and was relayed")
		inW.Close()
		require.NoError(t, <-done)
	})
}
