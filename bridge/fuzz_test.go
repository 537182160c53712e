package bridge

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// A headers file parses into headers net/http can send and the relay
// does not set itself, or into an error that holds no value of it.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{
		"Authorization: Bearer x\nX-Api-Key: k\n", "# c\n\nA: b\r\n", "Mcp-Name: x", "x:\x00", "a b: c", ":", "A:\tb \t",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeaders(data)
		if err != nil {
			// Every value that follows a ':' on a line is the user's secret.
			for line := range strings.Lines(string(data)) {
				_, v, ok := strings.Cut(line, ":")
				if v = strings.TrimSpace(v); ok && len(v) > 8 && strings.Contains(err.Error(), v) {
					t.Fatalf("the error %q holds the value %q", err, v)
				}
			}
			return
		}
		for name, values := range h {
			if !httpguts.ValidHeaderFieldName(name) || http.CanonicalHeaderKey(name) != name ||
				reservedHeaders[name] || strings.HasPrefix(name, "Mcp-") {
				t.Fatalf("header name %q accepted", name)
			}
			for _, v := range values {
				if v == "" || !httpguts.ValidHeaderFieldValue(v) || strings.TrimSpace(v) != v {
					t.Fatalf("value %q of %s accepted", v, name)
				}
			}
		}
	})
}

// readSSE hands out no event over its bound, however the stream is cut
// into lines.
func FuzzReadSSE(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data:a\ndata:b\n\n", "data: " + strings.Repeat("x", 100) + "\n\n", "data: a\r\n\r\n", ": c\n\ndata:\n\n", "data: x\ndata: y",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		const max = 64
		readSSE(bytes.NewReader(body), max, func(data []byte) error {
			if len(data) > max {
				t.Fatalf("an event of %d bytes passed a bound of %d", len(data), max)
			}
			return nil
		})
	})
}
