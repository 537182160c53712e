package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
)

// naiveGateway is a gateway whose worker reads tool names by exact key and
// runs an id-less tools/call, recording every tool it runs in the returned
// file: the worker a read-only bypass would need.
func naiveGateway(t *testing.T, opts Options) (*httptest.Server, string) {
	t.Helper()
	ran := filepath.Join(t.TempDir(), "ran")
	opts.SafeTools = []string{"echo"}
	_, srv := newTestGateway(t, opts, worker.LauncherOptions{Env: []string{"STUB_NAIVE=1", "STUB_CALL_LOG=" + ran}})
	return srv, ran
}

func ranTools(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestReadOnlyBypasses tries to run the gated tool "write" in a read-only
// session by reading the request differently from the worker.
func TestReadOnlyBypasses(t *testing.T) {
	cases := []struct {
		name, body string
		wantStatus int
		wantBody   string
	}{
		{"a second key differing in case", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","Name":"echo"}}`, 200, `"kind":"readOnly"`},
		{"the case-folded key first", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"NAME":"echo","name":"write"}}`, 200, `"kind":"readOnly"`},
		{"a duplicate exact key", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"write"}}`, 200, `"kind":"readOnly"`},
		{"an escaped name", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wr\u0069te"}}`, 200, `"kind":"readOnly"`},
		{"tools/call as a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write"}}`, 202, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, ran := naiveGateway(t, Options{ReadOnly: true})
			sid := rawSession(t, srv.URL)
			resp, body := rawDo(t, http.MethodPost, srv.URL, c.body, sidHdr, sid, protoHdr, "2025-11-25")
			if resp.StatusCode != c.wantStatus || !strings.Contains(body, c.wantBody) {
				t.Errorf("got %d %s, want %d with %s", resp.StatusCode, body, c.wantStatus, c.wantBody)
			}
			// A request after it: the worker has read the first by then.
			rawDo(t, http.MethodPost, srv.URL, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}}`, sidHdr, sid, protoHdr, "2025-11-25")
			if got := ranTools(t, ran); got != "echo" {
				t.Errorf("the worker ran %q, want only echo", got)
			}
		})
	}
}

// TestReadOnlyTokenOnReadWriteSession checks that read-only is decided per
// request too: a token without the write scope cannot write through a
// session that a write-scoped token of the same principal opened.
func TestReadOnlyTokenOnReadWriteSession(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	g, err := New(launcher(t, nil, worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + ran}}),
		Options{Logger: testLogger(t), SafeTools: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Close(ctx)
	})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ro := r.Header.Get("X-Test-Read-Only") == "1"
		p := &auth.Principal{Issuer: "https://issuer", Subject: "alice", UserID: "alice", ReadOnly: ro}
		g.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(hs.Close)
	sid := rawSession(t, hs.URL) // opened read-write
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write"}}`
	_, body := rawDo(t, http.MethodPost, hs.URL, call, sidHdr, sid, protoHdr, "2025-11-25", "X-Test-Read-Only", "1")
	if !strings.Contains(body, `"kind":"readOnly"`) {
		t.Errorf("read-only token: got %s, want a readOnly refusal", body)
	}
	_, body = rawDo(t, http.MethodPost, hs.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, sidHdr, sid, protoHdr, "2025-11-25", "X-Test-Read-Only", "1")
	if strings.Contains(body, `"write"`) {
		t.Errorf("read-only token: tools/list shows write: %s", body)
	}
	_, body = rawDo(t, http.MethodPost, hs.URL, call, sidHdr, sid, protoHdr, "2025-11-25")
	if !strings.Contains(body, "written") {
		t.Errorf("write token: got %s, want the tool's answer", body)
	}
	if got := ranTools(t, ran); got != "write" {
		t.Errorf("the worker ran %q, want write once (for the write token)", got)
	}
}

// TestHungWorkerIsKilled checks that a worker that stops reading its input
// cannot hold a request (and the gateway's goroutines) for ever: the write
// times out, the worker is killed and the request gets the exit error.
func TestHungWorkerIsKilled(t *testing.T) {
	g, srv := newTestGateway(t, Options{}, worker.LauncherOptions{Env: []string{"STUB_DEAF=1"}, SendTimeout: 300 * time.Millisecond})
	sid := rawSession(t, srv.URL)
	pid, _ := g.WorkerPid(sid)
	big := strings.Repeat("x", 256<<10) // more than a pipe holds
	resp, body := rawDo(t, http.MethodPost, srv.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+big+`"}}}`,
		sidHdr, sid, protoHdr, "2025-11-25")
	if !strings.Contains(body, "workerExited") {
		t.Errorf("got %d %.300s, want the worker-exited error", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); !os.IsNotExist(err) {
		t.Errorf("worker %d still exists after it was found hung", pid)
	}
	resp, _ = rawDo(t, http.MethodPost, srv.URL, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, sidHdr, sid, protoHdr, "2025-11-25")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("after the kill: got %d, want 404", resp.StatusCode)
	}
}
