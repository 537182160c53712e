package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/worker"
)

// The 2026-07-28 rows of the answer table (doc.go), each pinned by a golden
// transcript like the session rows. The stub worker speaks 2025-11-25 only,
// so these also pin what the gateway translates; rows marked "2026 worker"
// use the go-sdk sdkworker.
func init() {
	transportCases = append(transportCases, modernCases...)
}

var (
	sdk          = []string{"sdkworker"} // launcher(): sdkWorker
	echoCall     = modernBody("1", "tools/call", `"name":"echo","arguments":{"text":"hi"}`)
	regionCall   = modernBody("1", "tools/call", `"name":"region","arguments":{"region":"eu-west","text":"x"}`)
	modernGET    = step{method: http.MethodGet, headers: []string{protoHdr, "2026-07-28", "Accept", "text/event-stream"}}
	modernDELETE = step{method: http.MethodDelete, headers: []string{protoHdr, "2026-07-28"}}
)

var modernCases = []struct {
	name    string
	opts    Options
	command []string
	worker  worker.LauncherOptions
	session bool
	steps   []step
}{
	{name: "modern_tools_call", steps: []step{modern("tools/call", "echo", echoCall)}},
	{name: "modern_tools_call_2026_worker", command: sdk, steps: []step{modern("tools/call", "echo", echoCall)}},
	{name: "modern_tools_list", steps: []step{modern("tools/list", "", modernBody("1", "tools/list", ""))}},
	{name: "modern_discover", steps: []step{modern("server/discover", "", modernBody("1", "server/discover", ""))}},
	{name: "modern_discover_2026_worker", command: sdk, steps: []step{modern("server/discover", "", modernBody("1", "server/discover", ""))}},
	{name: "modern_session_id_ignored", steps: []step{modern("tools/call", "echo", echoCall, sidHdr, "00000000000000000000000000000000")}},
	{name: "modern_progress_sse", steps: []step{modern("tools/call", "progress", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)}},
	{name: "modern_log_without_level_dropped", steps: []step{modern("tools/call", "log", modernBody("1", "tools/call", `"name":"log","arguments":{"text":"note"}`))}},
	{name: "modern_log_with_level", steps: []step{modern("tools/call", "log", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log","arguments":{"text":"note"},"_meta":{"io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)}},
	{name: "modern_log_below_level", steps: []step{modern("tools/call", "log", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log","arguments":{"text":"note"},"_meta":{"io.modelcontextprotocol/logLevel":"error","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)}},
	{name: "modern_duplicate_meta", steps: []step{modern("tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{},`+modernMetaJSON+`}}`)}},
	{name: "modern_method_missing", steps: []step{post(echoCall, protoHdr, "2026-07-28", "Mcp-Name", "echo")}},
	{name: "modern_method_mismatch", steps: []step{modern("tools/list", "echo", echoCall)}},
	{name: "modern_name_missing", steps: []step{modern("tools/call", "", echoCall)}},
	{name: "modern_name_mismatch", steps: []step{modern("tools/call", "write", echoCall)}},
	{name: "modern_name_base64", steps: []step{modern("tools/call", "=?base64?ZWNobw==?=", echoCall)}},
	{name: "modern_name_ambiguous", steps: []step{modern("tools/call", "echo", strings.Replace(echoCall, `"name":"echo"`, `"name":"echo","Name":"write"`, 1))}},
	{name: "modern_meta_version_missing", steps: []step{modern("tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`)}},
	{name: "modern_meta_version_mismatch", steps: []step{modern("tools/list", "", strings.Replace(modernBody("1", "tools/list", ""), `protocolVersion":"2026-07-28"`, `protocolVersion":"2025-11-25"`, 1))}},
	{name: "modern_capabilities_missing", steps: []step{modern("tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)}},
	{name: "modern_meta_on_legacy_header", steps: []step{post(echoCall, protoHdr, "2025-11-25", "Mcp-Method", "tools/call", "Mcp-Name", "echo")}},
	{name: "modern_meta_without_header", steps: []step{post(echoCall)}},
	{name: "modern_batch", steps: []step{modern("tools/call", "echo", "["+echoCall+"]")}},
	{name: "modern_response", steps: []step{modern("tools/call", "", `{"jsonrpc":"2.0","id":1,"result":{}}`)}},
	{name: "modern_notification_202", steps: []step{modern("notifications/cancelled", "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)}},
	{name: "modern_removed_method_404", steps: []step{modern("ping", "", modernBody("1", "ping", ""))}},
	{name: "modern_unknown_method_404", steps: []step{modern("nope/nothing", "", modernBody("1", "nope/nothing", ""))}},
	{name: "modern_param_header_ok", command: sdk, steps: []step{modern("tools/call", "region", regionCall, "Mcp-Param-Region", "eu-west")}},
	{name: "modern_param_header_missing", command: sdk, steps: []step{modern("tools/call", "region", regionCall)}},
	{name: "modern_param_header_mismatch", command: sdk, steps: []step{modern("tools/call", "region", regionCall, "Mcp-Param-Region", "us-east")}},
	{name: "modern_param_header_unexpected", command: sdk, steps: []step{modern("tools/call", "region", modernBody("1", "tools/call", `"name":"region","arguments":{"text":"x"}`), "Mcp-Param-Region", "us-east")}},
	{name: "modern_read_only", opts: Options{ReadOnly: true, SafeTools: []string{"echo"}}, steps: []step{modern("tools/call", "write", modernBody("1", "tools/call", `"name":"write"`))}},
	{name: "modern_listen_needs_sse", steps: []step{modern("subscriptions/listen", "", modernBody("1", "subscriptions/listen", `"notifications":{"toolsListChanged":true}`), "Accept", "application/json")}},
	{name: "modern_listen_no_filter", steps: []step{modern("subscriptions/listen", "", modernBody("1", "subscriptions/listen", ""))}},
	{name: "modern_listen", steps: []step{withDuring(modern("subscriptions/listen", "", modernBody("1", "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)), crashWorker)}},
	{name: "modern_input_required", steps: []step{modern("tools/call", "sample", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`)}},
	{name: "modern_missing_capability", steps: []step{modern("tools/call", "sample", modernBody("1", "tools/call", `"name":"sample","arguments":{"text":"x"}`))}},
	{name: "modern_get_405", steps: []step{modernGET}},
	{name: "modern_delete_405", steps: []step{modernDELETE}},
	{name: "modern_too_many_503", opts: Options{MaxSessions: 1}, session: true, steps: []step{modern("tools/call", "echo", echoCall)}},
	{name: "modern_too_many_per_user_429", opts: Options{MaxSessionsPerUser: 1}, session: true, steps: []step{modern("tools/call", "echo", echoCall)}},
	{name: "modern_worker_missing_502", command: []string{"/nonexistent/worker"}, steps: []step{modern("tools/call", "echo", echoCall)}},
	{name: "modern_worker_hangs_504", opts: Options{WorkerStartTimeout: 300 * time.Millisecond}, worker: worker.LauncherOptions{Env: []string{"STUB_HANG_INIT=1"}}, steps: []step{modern("tools/call", "echo", echoCall)}},
}

func withDuring(s step, during func(t *testing.T, url, sid string)) step {
	s.during = during
	return s
}

// crashWorker ends a listen stream from outside: the caller's worker exits
// (the stub's crash tool), so the stream closes with the completion result.
func crashWorker(t *testing.T, url, _ string) {
	rawDo(t, http.MethodPost, url, modernBody("9", "tools/call", `"name":"crash","arguments":{"code":3}`),
		protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "crash")
}
