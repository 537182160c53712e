package gateway

import (
	"encoding/json"
	"github.com/stretchr/testify/require"
	"io"
	"net/http"
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
