package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longestAttr is a slog handler that remembers the longest attribute value
// logged, for the attacker-sized log line tests.
type longestAttr struct {
	mu    *sync.Mutex
	max   *int
	vals  *[]string
	attrs []slog.Attr
}

func newLongestAttr() longestAttr {
	return longestAttr{mu: new(sync.Mutex), max: new(int), vals: new([]string)}
}

func (h longestAttr) Enabled(context.Context, slog.Level) bool { return true }
func (h longestAttr) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	note := func(a slog.Attr) bool {
		v := a.Value.String()
		*h.max = max(*h.max, len(v))
		*h.vals = append(*h.vals, v)
		return true
	}
	for _, a := range h.attrs {
		note(a)
	}
	r.Attrs(note)
	return nil
}
func (h longestAttr) WithAttrs(as []slog.Attr) slog.Handler {
	return longestAttr{h.mu, h.max, h.vals, append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h longestAttr) WithGroup(string) slog.Handler { return h }

// take returns the longest value logged and every value, and forgets them.
func (h longestAttr) take() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, vals := *h.max, *h.vals
	*h.max, *h.vals = 0, nil
	return n, vals
}

func TestClip(t *testing.T) {
	at := strings.Repeat("a", maxPeerString)
	assert.Equal(t, at, clip(at), "a string of exactly the cap passes whole")
	over := at + "b"
	got := clip(over)
	assert.True(t, strings.HasPrefix(got, at), "got %q", got)
	assert.False(t, strings.HasPrefix(strings.TrimPrefix(got, at), "b"), "one byte over the cap is cut: got %q", got)
	assert.Contains(t, got, fmt.Sprintf("%d bytes", len(over)), "the cut says how long the string was")
	// A cut never splits a rune.
	runes := strings.Repeat("é", maxPeerString)
	assert.True(t, strings.HasPrefix(clip(runes), strings.Repeat("é", maxPeerString/2)))
	assert.NotContains(t, clip(runes), "\uFFFD")
}

// TestPeerStringsCapped: names, methods, ids and headers a peer chose are
// logged and echoed capped: a 2 MiB tool name must not make a 2 MiB log
// line or a 4 MiB answer.
func TestPeerStringsCapped(t *testing.T) {
	h := newLongestAttr()
	_, srv := newTestGateway(t, Options{ReadOnly: true, LoopbackHostCheck: true, Logger: slog.New(h)})
	sid := rawSession(t, srv.URL)
	huge := strings.Repeat("x", 2<<20)
	over := strings.Repeat("t", maxPeerString+1)
	bigHeader := strings.Repeat("x", 200<<10) // within net/http's header limit
	const answerCap = 4 << 10

	cases := []struct {
		name    string
		body    string
		headers []string
		host    string
		status  int
		whole   string // a peer string that must appear nowhere whole
	}{
		{"a refused tool name one byte over the cap", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + over + `"}}`,
			[]string{sidHdr, sid, protoHdr, "2025-11-25"}, "", http.StatusOK, over},
		{"a refused 2 MiB tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + huge + `"}}`,
			[]string{sidHdr, sid, protoHdr, "2025-11-25"}, "", http.StatusOK, ""},
		{"a dropped 2 MiB method", `{"jsonrpc":"2.0","method":"` + huge + `"}`,
			[]string{sidHdr, sid, protoHdr, "2025-11-25"}, "", http.StatusAccepted, ""},
		{"a dropped 2 MiB response id", `{"jsonrpc":"2.0","id":"` + huge + `","result":{}}`,
			[]string{sidHdr, sid, protoHdr, "2025-11-25"}, "", http.StatusAccepted, ""},
		{"a refused Host", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, bigHeader + ".example", http.StatusForbidden, ""},
		{"a refused Origin", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Origin", "https://" + bigHeader}, "", http.StatusForbidden, ""},
		{"an unsupported protocol version", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{protoHdr, bigHeader}, "", http.StatusBadRequest, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.take()
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(c.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			for i := 0; i+1 < len(c.headers); i += 2 {
				req.Header.Set(c.headers[i], c.headers[i+1])
			}
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body := readAll(t, resp)
			require.Equal(t, c.status, resp.StatusCode, "body %.300s", body)
			assert.Less(t, len(body), answerCap, "the answer echoes the peer's string whole")
			longest, vals := h.take()
			assert.LessOrEqual(t, longest, maxPeerString+64, "a log attribute carries the peer's string whole")
			if c.whole != "" {
				assert.NotContains(t, body, c.whole, "the answer echoes the peer's string whole")
				for _, v := range vals {
					assert.NotContains(t, v, c.whole, "a log attribute carries the peer's string whole")
				}
			}
		})
	}
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	_, err := io.Copy(&b, resp.Body)
	require.NoError(t, err)
	return b.String()
}
