package gateway

import (
	"encoding/json"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/stretchr/testify/require"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestModernParamHeaderAmbiguousArgument: an x-mcp-header argument the
// gateway cannot read unambiguously (a key twice, a case twin) must be
// refused, not treated as absent: the worker reads one of the values while
// an intermediary routing on Mcp-Param-* saw no header at all.
func TestModernParamHeaderAmbiguousArgument(t *testing.T) {
	_, url := principalGateway(t, []string{sdkWorker}, Options{})
	for _, args := range []string{
		`{"region":"eu-west","region":"us-east"}`,
		`{"region":"eu-west","Region":"us-east"}`,
		`{"Region":"us-east"}`,
	} {
		body := modernBody("1", "tools/call", `"name":"region","arguments":`+args)
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "region",
			"X-Test-User", "alice")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", args, out)
		assert.Contains(t, out, `"code":-32020`, args)
		assert.NotContains(t, out, "region us-east", args)
	}
}

// listenURIs returns a subscriptions/listen notifications filter of n
// distinct resource URIs starting at from.
func listenURIs(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "file:///r/" + strconv.Itoa(from+i)
	}
	return out
}

// TestModernListenResourceBound: a listen's resourceSubscriptions are
// bounded (each URI is matched against every resource update, subscribed
// at a 2025 worker, and kept in the worker's union), and the union of a
// worker's listeners does not outgrow the listeners that are open: a
// client that keeps one listen open and cycles others through fresh URIs
// must not grow it without end.
func TestModernListenResourceBound(t *testing.T) {
	g, url := principalGateway(t, []string{sdkWorker}, Options{})
	listenBody := func(uris []string) string {
		b, _ := json.Marshal(map[string]any{"resourceSubscriptions": uris})
		return modernBody("1", "subscriptions/listen", `"notifications":`+string(b))
	}
	// The status only: an accepted listen is a stream that does not end.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(listenBody(listenURIs(0, maxListenResources+1))))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		protoHdr: "2026-07-28", "Mcp-Method": "subscriptions/listen", "X-Test-User": "alice"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "one URI over the bound")

	status, _ := modernCall(t, url, "alice", false, "1", "echo", map[string]any{"text": "x"})
	require.Equal(t, http.StatusOK, status)
	uw := g.workerOf(testKey("alice", false))
	require.NotNil(t, uw)
	keep := &listener{filter: notifyFilter{ResourceSubscriptions: listenURIs(0, 1)}, notify: make(chan struct{}, 1)}
	_, ok := g.addListener(uw, keep)
	require.True(t, ok)
	for i := range 3 * maxListeners {
		l := &listener{filter: notifyFilter{ResourceSubscriptions: listenURIs(1+i*maxListenResources, maxListenResources)}, notify: make(chan struct{}, 1)}
		_, ok := g.addListener(uw, l)
		require.True(t, ok)
		g.removeListener(uw, l)
	}
	uw.subs.mu.Lock()
	n := len(uw.subs.union.ResourceSubscriptions)
	uw.subs.mu.Unlock()
	assert.LessOrEqual(t, n, maxListeners*maxListenResources, "the union outgrew its open listeners")
	g.removeListener(uw, keep)
}

// TestModernRepeatedHeaders: a header sent on two field lines reads as
// their comma-joined list (RFC 9110 §5.3), which never equals the body; the
// gateway read only the first line, so an intermediary that reads the last
// (or the joined list) could route on a value the body does not carry.
func TestModernRepeatedHeaders(t *testing.T) {
	_, url := principalGateway(t, []string{sdkWorker}, Options{})
	body := modernBody("1", "tools/call", `"name":"region","arguments":{"region":"eu-west"}`)
	base := [][2]string{{protoHdr, "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", "region"}, {"Mcp-Param-Region", "eu-west"}}
	for _, extra := range [][2]string{
		{"Mcp-Method", "tools/list"},
		{"Mcp-Name", "echo"},
		{"Mcp-Param-Region", "us-east"},
		{protoHdr, "2025-11-25"},
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Test-User", "alice")
		for _, h := range base {
			req.Header.Set(h[0], h[1])
		}
		req.Header.Add(extra[0], extra[1])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s twice: %s", extra[0], out)
		assert.Contains(t, string(out), `"code":-32020`, extra[0])
	}
}

// TestModernHeaderBodyProbesHold: forms of one value that two readers might
// read apart. Each is refused, or read the same by the gateway and the
// worker (a read-only caller never runs the gated tool "write").
func TestModernHeaderBodyProbesHold(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	_, url := principalGateway(t, []string{stubWorker}, Options{SafeTools: []string{"echo"}},
		worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + calls}})
	const ver = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + name + `,"_meta":{` + ver + `,` + caps + `}}}`
	}
	for _, tc := range []struct {
		what, body, mcpName, proto string
		status                     int
	}{
		{"unicode escape in the body's name, header says echo", call(`"\u0077rite"`), "echo", "2026-07-28", 400},
		{"unicode escape in the body's name, header agrees", call(`"\u0077rite"`), "write", "2026-07-28", 404},
		{"base64 header of the gated name", call(`"write"`), "=?base64?d3JpdGU=?=", "2026-07-28", 404},
		{"base64 header of echo, body write", call(`"write"`), "=?base64?ZWNobw==?=", "2026-07-28", 400},
		{"unpadded base64", call(`"echo"`), "=?base64?ZWNobw?=", "2026-07-28", 400},
		{"sentinel in another case is a plain value", call(`"echo"`), "=?BASE64?ZWNobw==?=", "2026-07-28", 400},
		{"non-ASCII header", call(`"echo"`), "éche", "2026-07-28", 400},
		{"_meta version case twin", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","_meta":{` + ver + `,"io.modelcontextprotocol/protocolversion":"2025-11-25",` + caps + `}}}`, "write", "2026-07-28", 400},
		{"_meta version twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","_meta":{` + ver + `,` + ver + `,` + caps + `}}}`, "write", "2026-07-28", 400},
		{"_meta twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","_meta":{` + ver + `,` + caps + `},"_meta":{}}}`, "write", "2026-07-28", 400},
		{"_meta version other than the header", strings.Replace(call(`"echo"`), "2026-07-28", "2025-11-25", 1), "echo", "2026-07-28", 400},
	} {
		resp, out := rawDo(t, http.MethodPost, url, tc.body, protoHdr, tc.proto, "mcp-method", "tools/call", "MCP-NAME", tc.mcpName,
			"X-Test-User", "carol", "X-Test-Read-Only", "1")
		assert.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.what, out)
	}
	if b, err := os.ReadFile(calls); err == nil {
		assert.NotContains(t, string(b), "write", "a gated tool ran")
	}
}

// TestParamHeaderIntegerOutsideSafeRange: float64 comparison equates
// integers beyond 2^53 that a worker reading int64 tells apart (header
// 9007199254740992, body 9007199254740993). MCP 2026-07-28 allows
// x-mcp-header integers only within the JavaScript safe range: refuse the
// rest.
func TestParamHeaderIntegerOutsideSafeRange(t *testing.T) {
	assert.False(t, primitiveEqual("9007199254740992", json.RawMessage(`9007199254740993`)))
	assert.False(t, primitiveEqual("-9007199254740992", json.RawMessage(`-9007199254740993`)))
	assert.True(t, primitiveEqual("9007199254740991", json.RawMessage(`9007199254740991`)))
	assert.True(t, primitiveEqual("42.0", json.RawMessage(`42`)), "numerically, as the spec asks")
	assert.False(t, primitiveEqual("42.5", json.RawMessage(`42.5`)), "not an integer")
}
