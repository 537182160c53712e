package credential

import (
	"strings"
	"testing"
	"time"
)

// FuzzReadAnswer: whatever the token endpoint answers, reading it never
// panics, a token comes with a positive lifetime, and an error never
// carries text of the answer beyond an RFC 6749 error code: not the
// token, not the description.
func FuzzReadAnswer(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"access_token":"tok-abcdefgh","token_type":"Bearer","expires_in":300,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`))
	f.Add(403, "application/json", []byte(`{"error":"access_denied","error_description":"Client is not within the token audience"}`))
	f.Add(400, "application/json; charset=utf-8", []byte(`{"error":"invalid \"x\"","access_token":"tok-abcdefgh"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"tok-abcdefgh","token_type":"DPoP"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"tok-abcdefgh","token_type":"bearer","expires_in":"soon"}`))
	f.Add(500, "text/html", []byte(`<html>tok-abcdefgh</html>`))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		tok, lifetime, err := readAnswer(status, contentType, body)
		if err == nil {
			if tok == "" || lifetime <= 0 || lifetime > 367*24*time.Hour || len(tok) > MaxSecretBytes {
				t.Fatalf("token %d bytes, lifetime %v", len(tok), lifetime)
			}
			return
		}
		msg := err.Error()
		if e, ok := err.(*Error); ok && strings.Contains(e.IssuerError, "tok-abcdefgh") {
			return // the issuer's own choice of error code, shown as a code
		}
		if len(msg) > 300 {
			t.Fatalf("error of %d bytes: %q", len(msg), msg)
		}
		if strings.Contains(msg, "tok-abcdefgh") || strings.Contains(msg, "within the token audience") {
			t.Fatalf("the error carries the answer's text: %q", msg)
		}
	})
}
