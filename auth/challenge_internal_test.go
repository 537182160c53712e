package auth

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// challengeCharsetOK reports whether every quoted value of a Bearer
// challenge is within RFC 6750 §3's %x20-21 / %x23-5B / %x5D-7E, and
// returns the error_description value.
func challengeCharsetOK(t *testing.T, h string) string {
	t.Helper()
	const key = `error_description="`
	i := strings.Index(h, key)
	if i < 0 {
		t.Fatalf("no error_description in %q", h)
	}
	v := h[i+len(key):]
	end := strings.IndexByte(v, '"')
	if end < 0 {
		t.Fatalf("error_description does not end in %q", h)
	}
	v = v[:end]
	for j := 0; j < len(v); j++ {
		if c := v[j]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			t.Fatalf("error_description holds byte %#x outside RFC 6750 §3: %q", c, h)
		}
	}
	for j := 0; j < len(h); j++ {
		if c := h[j]; c < 0x20 || c > 0x7e {
			t.Fatalf("challenge holds byte %#x: %q", c, h)
		}
	}
	return v
}

// FuzzChallengeCharset: whatever a client names in a refusal (a tool name
// of its choosing), the challenge stays within RFC 6750 §3's character
// set, and the description decodes back to what was said.
func FuzzChallengeCharset(f *testing.F) {
	for _, seed := range []string{"query", "x\x7fy", "café", `a"b\c`, "100%", "\xff\xfe", "line\r\nbreak", ""} {
		f.Add(seed)
	}
	a := &Authenticator{metadataURL: "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"}
	f.Fuzz(func(t *testing.T, tool string) {
		desc := "tool " + quoteTool(tool) + " needs the scope mcp:write"
		rec := httptest.NewRecorder()
		a.writeError(rec, ErrNeedsToolScope, desc, "mcp:use mcp:write")
		got := challengeCharsetOK(t, rec.Header().Get("WWW-Authenticate"))
		back, err := url.PathUnescape(got)
		if err != nil || back != desc {
			t.Fatalf("error_description %q decodes to %q (%v), want %q", got, back, err, desc)
		}
	})
}
