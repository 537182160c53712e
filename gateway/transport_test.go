package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/worker"
)

// step is one HTTP exchange of a transcript. In headers and body, {{sid}}
// stands for the case's session id.
type step struct {
	method  string
	headers []string // name, value pairs; a value of "-" removes a default
	body    string
	// during, when set, runs once the response headers are in (to end a
	// stream that would otherwise hang, say).
	during func(t *testing.T, url, sid string)
}

const (
	protoHdr = "MCP-Protocol-Version"
	sidHdr   = "MCP-Session-Id"
)

func post(body string, headers ...string) step {
	return step{method: http.MethodPost, headers: headers, body: body}
}

func withSession(s step) step {
	s.headers = append([]string{sidHdr, "{{sid}}", protoHdr, "2025-11-25"}, s.headers...)
	return s
}

// transportCases pin each row of the answers table in doc.go (and in
// docs/gateway.md), so that a change to any answer shows in review.
var transportCases = []struct {
	name    string
	opts    Options
	command []string               // the worker; nil means the stub worker
	worker  worker.LauncherOptions // how it starts
	session bool                   // open a session first; its id is {{sid}}
	steps   []step
}{
	{name: "initialize", steps: []step{post(initBody)}},
	{name: "initialize_2025-03-26_no_version_header", steps: []step{post(strings.Replace(initBody, "2025-11-25", "2025-03-26", 1))}},
	{name: "initialize_with_session_id", session: true, steps: []step{withSession(post(initBody))}},
	{name: "initialize_in_batch", steps: []step{post("["+initBody+"]", protoHdr, "2025-03-26")}},
	{name: "post_missing_session", steps: []step{post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, protoHdr, "2025-11-25")}},
	{name: "post_unknown_session", steps: []step{post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, protoHdr, "2025-11-25", sidHdr, "00000000000000000000000000000000")}},
	{name: "post_notification_202", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`))}},
	{name: "post_client_response_202", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":99,"result":{}}`))}},
	{name: "post_request_json", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`))}},
	{name: "post_request_sse_progress_first", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":7}}}`))}},
	{name: "post_request_sse_log_first", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"log","arguments":{"text":"note"}}}`))}},
	{name: "post_accept_sse_only", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Accept", "text/event-stream"))}},
	{name: "post_accept_json_only", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Accept", "application/json"))}},
	{name: "post_accept_neither", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Accept", "text/html"))}},
	{name: "post_content_type", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Content-Type", "text/plain"))}},
	{name: "post_malformed_json", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0",`))}},
	{name: "post_not_jsonrpc", session: true, steps: []step{withSession(post(`{"jsonrpc":"1.0","id":1,"method":"ping"}`))}},
	{name: "post_null_id", session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":null,"method":"ping"}`))}},
	{name: "post_body_too_large_declared", opts: Options{MaxBodyBytes: 256}, session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 300) + `"}}}`))}},
	{name: "post_body_too_large_chunked", opts: Options{MaxBodyBytes: 256}, session: true, steps: []step{withSession(post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("x", 300)+`"}}}`, "Transfer-Encoding", "chunked"))}},
	{name: "version_absent_is_2025-03-26", session: true, steps: []step{post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, sidHdr, "{{sid}}")}},
	{name: "version_2025-03-26_on_2025-11-25_session", session: true, steps: []step{post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, sidHdr, "{{sid}}", protoHdr, "2025-03-26")}},
	{name: "version_unsupported", session: true, steps: []step{post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, sidHdr, "{{sid}}", protoHdr, "2024-01-01")}},
	{name: "version_2026-07-28_header", session: true, steps: []step{post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, sidHdr, "{{sid}}", protoHdr, "2026-07-28")}},
	{name: "server_discover_2026-07-28", steps: []step{post(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, protoHdr, "2026-07-28")}},
	{name: "server_discover_no_header", steps: []step{post(`{"jsonrpc":"2.0","id":0,"method":"server/discover"}`)}},
	{name: "batch_2025-03-26", session: true, steps: []step{post(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]`, sidHdr, "{{sid}}", protoHdr, "2025-03-26")}},
	{name: "batch_2025-03-26_one_request", session: true, steps: []step{post(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, sidHdr, "{{sid}}", protoHdr, "2025-03-26")}},
	{name: "batch_2025-03-26_notifications_only", session: true, steps: []step{post(`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`, sidHdr, "{{sid}}", protoHdr, "2025-03-26")}},
	{name: "batch_2025-11-25_refused", session: true, steps: []step{withSession(post(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`))}},
	{name: "batch_empty", session: true, steps: []step{post(`[]`, sidHdr, "{{sid}}", protoHdr, "2025-03-26")}},
	{name: "get_stream", session: true, steps: []step{{method: http.MethodGet, headers: []string{sidHdr, "{{sid}}", protoHdr, "2025-11-25", "Accept", "text/event-stream"},
		during: func(t *testing.T, url, sid string) {
			// A second GET on the same session: 409, as from the go-sdk.
			resp, body := rawDo(t, http.MethodGet, url, "", sidHdr, sid, "Accept", "text/event-stream")
			if resp.StatusCode != http.StatusConflict {
				t.Errorf("second GET: got %d %s, want 409", resp.StatusCode, body)
			}
			// Ending the session ends the stream.
			if resp, _ := rawDo(t, http.MethodDelete, url, "", sidHdr, sid); resp.StatusCode != http.StatusOK {
				t.Errorf("DELETE: got %d, want 200", resp.StatusCode)
			}
		}}}},
	{name: "get_missing_session", steps: []step{{method: http.MethodGet, headers: []string{"Accept", "text/event-stream"}}}},
	{name: "get_unknown_session", steps: []step{{method: http.MethodGet, headers: []string{"Accept", "text/event-stream", sidHdr, "00000000000000000000000000000000"}}}},
	{name: "get_accept_json", session: true, steps: []step{{method: http.MethodGet, headers: []string{"Accept", "application/json", sidHdr, "{{sid}}"}}}},
	{name: "get_last_event_id", session: true, steps: []step{{method: http.MethodGet, headers: []string{"Accept", "text/event-stream", sidHdr, "{{sid}}", "Last-Event-ID", "x_1"}}}},
	{name: "delete_live_then_post_404", session: true, steps: []step{
		{method: http.MethodDelete, headers: []string{sidHdr, "{{sid}}"}},
		withSession(post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)),
		{method: http.MethodDelete, headers: []string{sidHdr, "{{sid}}"}},
	}},
	{name: "delete_missing_session", steps: []step{{method: http.MethodDelete}}},
	{name: "method_put_405", steps: []step{{method: http.MethodPut, body: "{}"}}},
	{name: "origin_refused_every_method", session: true, steps: []step{
		withSession(post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, "Origin", "https://evil.example.com")),
		{method: http.MethodGet, headers: []string{sidHdr, "{{sid}}", "Accept", "text/event-stream", "Origin", "https://evil.example.com"}},
		{method: http.MethodDelete, headers: []string{sidHdr, "{{sid}}", "Origin", "https://evil.example.com"}},
		{method: http.MethodPost, headers: []string{"Origin", "null"}, body: initBody},
	}},
	{name: "origin_loopback_and_configured", opts: Options{AllowedOrigins: []string{"https://app.example.com", "tools.example.org"}}, session: true, steps: []step{
		withSession(post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, "Origin", "http://localhost:3000")),
		withSession(post(`{"jsonrpc":"2.0","id":6,"method":"ping"}`, "Origin", "https://app.example.com")),
		withSession(post(`{"jsonrpc":"2.0","id":7,"method":"ping"}`, "Origin", "https://tools.example.org:8443")),
		withSession(post(`{"jsonrpc":"2.0","id":8,"method":"ping"}`, "Origin", "http://app.example.com")),
	}},
	{name: "dns_rebinding_host", opts: Options{LoopbackHostCheck: true}, steps: []step{
		post(initBody, "Host", "evil.example.com", "Origin", "http://evil.example.com"),
		post(initBody, "Host", "evil.example.com"),
	}},
	{name: "read_only", opts: Options{ReadOnly: true, SafeTools: []string{"echo", "pid"}}, session: true, steps: []step{
		withSession(post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)),
		withSession(post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{}}}`)),
		withSession(post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"read"}}}`)),
	}},
	{name: "read_only_nothing_safe", opts: Options{ReadOnly: true}, session: true, steps: []step{
		withSession(post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)),
		withSession(post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"read"}}}`)),
	}},
	{name: "worker_start_timeout_504", opts: Options{WorkerStartTimeout: 200 * time.Millisecond}, worker: worker.LauncherOptions{Env: []string{"STUB_HANG_INIT=1"}}, steps: []step{post(initBody)}},
	{name: "worker_refuses_initialize", worker: worker.LauncherOptions{Env: []string{"STUB_INIT_ERROR=1"}}, steps: []step{post(initBody), post(initBody)}},
	{name: "worker_command_missing_502", command: []string{"/nonexistent/worker"}, steps: []step{post(initBody)}},
	{name: "too_many_sessions_503", opts: Options{MaxSessions: 1}, session: true, steps: []step{post(initBody)}},
	// The user's slot is held by a per-user worker: an idle session would
	// have been ended for the new one (evictIdle).
	{name: "too_many_sessions_per_user_429", opts: Options{MaxSessionsPerUser: 1}, steps: []step{modern("tools/call", "echo", echoCall), post(initBody)}},
}

func TestTransportGolden(t *testing.T) {
	for _, tc := range transportCases {
		t.Run(tc.name, func(t *testing.T) {
			g, srv := newTestGatewayOf(t, tc.command, tc.opts, tc.worker)
			sid := ""
			if tc.session {
				sid = rawSession(t, srv.URL)
			}
			var out bytes.Buffer
			for _, st := range tc.steps {
				transcribe(t, &out, srv.URL, sid, st)
			}
			golden := filepath.Join("testdata", "transport", tc.name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./gateway -run TestTransportGolden -update)", err)
			}
			if got := out.String(); got != string(want) {
				t.Errorf("transcript differs from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
			// Whatever happened, a refused or failed session leaves no
			// worker behind, and a live one has exactly one.
			live := 0
			if sid != "" {
				if _, ok := g.WorkerPid(sid); ok {
					live = 1
				}
			}
			if got := g.Sessions(); got > live+countNewSessions(out.String()) {
				t.Errorf("got %d live sessions, want at most %d", got, live)
			}
		})
	}
}

// countNewSessions counts initialize answers that opened a session.
func countNewSessions(transcript string) int {
	return strings.Count(transcript, "< Mcp-Session-Id: {{new}}")
}

// transcribe runs one step and writes it, normalized, to out.
func transcribe(t *testing.T, out *bytes.Buffer, url, sid string, st step) {
	t.Helper()
	body := strings.ReplaceAll(st.body, "{{sid}}", sid)
	var rd io.Reader
	if st.body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), st.method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if st.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(st.headers); i += 2 {
		name, value := st.headers[i], strings.ReplaceAll(st.headers[i+1], "{{sid}}", sid)
		switch {
		case name == "Host":
			req.Host = value
		case name == "Transfer-Encoding":
			req.ContentLength = -1 // no Content-Length: the body is chunked
			req.Body = io.NopCloser(rd)
		default:
			req.Header.Set(name, value)
		}
	}
	fmt.Fprintf(out, "> %s /mcp\n", st.method)
	names := make([]string, 0, len(req.Header))
	for k := range req.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(out, "> %s: %s\n", k, normalize(req.Header.Get(k), sid))
	}
	if req.Host != "" && req.Host != strings.TrimPrefix(url, "http://") {
		fmt.Fprintf(out, "> Host: %s\n", req.Host)
	}
	if body != "" {
		fmt.Fprintf(out, ">\n> %s\n", normalize(body, sid))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if st.during != nil {
		st.during(t, url, sid)
	}
	got, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(out, "< %d\n", resp.StatusCode)
	for _, k := range []string{"Content-Type", "Allow", "Mcp-Session-Id", "Retry-After", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			if k == "Mcp-Session-Id" {
				v = "{{new}}"
			}
			fmt.Fprintf(out, "< %s: %s\n", k, v)
		}
	}
	if len(got) > 0 {
		fmt.Fprintf(out, "<\n%s\n", strings.TrimRight(normalize(string(got), sid), "\n"))
	}
	out.WriteString("\n")
}

// normalize hides what changes from run to run: the session id, pids, a
// requestState the gateway minted.
func normalize(s, sid string) string {
	if sid != "" {
		s = strings.ReplaceAll(s, sid, "{{sid}}")
	}
	return requestStateRE.ReplaceAllString(s, `"requestState":"{{state}}"`)
}

var requestStateRE = regexp.MustCompile(`"requestState":"[0-9a-f]{32}"`)
