package workerproto

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrameRoundTrip: what one side writes is what the other reads.
func TestFrameRoundTrip(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status"}}`)
	f, err := ParseFrame(AppendFrame(nil, 3, msg))
	require.NoError(t, err)
	assert.Equal(t, Frame{Session: 3, Message: msg}, f)

	f, err = ParseFrame(AppendFrame(nil, 0, msg))
	require.NoError(t, err)
	assert.Equal(t, int64(0), f.Session)

	f, err = ParseFrame(EndLine(7))
	require.NoError(t, err)
	assert.Equal(t, Frame{Session: 7, End: true}, f)

	id := "r1_abc\"\n{}"
	f, err = ParseFrame(OpenLine(9, id))
	require.NoError(t, err)
	assert.Equal(t, Frame{Session: 9, Open: id}, f)
	assert.NotContains(t, string(OpenLine(9, id)), "\n")
}

// TestFrameIsStrict: nothing but a frame of the gateway's shape is read
// as one: a client's message, a frame with a member too many, a session
// that is not a whole number in range, a message that is not an object,
// two of message, open and end, and the rest.
func TestFrameIsStrict(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2,"message":{"jsonrpc":"2.0","method":"ping","id":1}}}`
	_, err := ParseFrame([]byte(ok))
	require.NoError(t, err, "the baseline must parse")
	for _, tt := range []struct{ name, line, want string }{
		{"a client's message", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status"}}`, "unknown field"},
		{"the identity line", `{"jsonrpc":"2.0","method":"mcpgate/identity","params":{"user":"a","readOnly":true,"tools":"*","scope":"user"}}`, "unknown field"},
		{"another method", strings.Replace(ok, "mcpgate/session", "mcpgate/sessions", 1), "mcpgate/session"},
		{"a request, not a notification", strings.Replace(ok, `"method"`, `"id":1,"method"`, 1), "unknown field"},
		{"an unknown member", strings.Replace(ok, `"session":2`, `"session":2,"user":"bob"`, 1), "unknown field"},
		{"no session", strings.Replace(ok, `"session":2,`, "", 1), "params.session"},
		{"a negative session", strings.Replace(ok, `"session":2`, `"session":-1`, 1), "params.session"},
		{"a fractional session", strings.Replace(ok, `"session":2`, `"session":2.5`, 1), "params.session"},
		{"an exponent session", strings.Replace(ok, `"session":2`, `"session":2e0`, 1), "params.session"},
		{"a session as a string", strings.Replace(ok, `"session":2`, `"session":"2"`, 1), "session"},
		{"a session too large", strings.Replace(ok, `"session":2`, `"session":9007199254740992`, 1), "params.session"},
		{"a message that is a string", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2,"message":"{}"}}`, "params.message"},
		{"a message that is a batch", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2,"message":[{}]}}`, "params.message"},
		{"a null message", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2,"message":null}}`, "params.message"},
		{"message and end", strings.Replace(ok, `"session":2`, `"session":2,"end":true`, 1), "exactly one"},
		{"message and open", strings.Replace(ok, `"session":2`, `"session":2,"open":"x"`, 1), "exactly one"},
		{"neither", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2}}`, "exactly one"},
		{"end false", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2,"end":false}}`, "params.end"},
		{"end of session 0", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":0,"end":true}}`, "session 0"},
		{"open of session 0", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":0,"open":"x"}}`, "session 0"},
		{"an empty open", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":1,"open":""}}`, "params.open"},
		{"an open too long", `{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":1,"open":"` + strings.Repeat("x", MaxSessionID+1) + `"}}`, "params.open"},
		{"duplicate session", strings.Replace(ok, `"session":2`, `"session":2,"session":3`, 1), ""},
		{"no params", `{"jsonrpc":"2.0","method":"mcpgate/session"}`, "with params"},
		{"two frames on a line", ok + ok, "after the object"},
		{"not JSON", "mcpgate/session 2", "invalid character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFrame([]byte(tt.line))
			if tt.want == "" {
				// encoding/json keeps the last of duplicate members: the
				// gateway never writes one, and either way the frame
				// names one session.
				if err == nil {
					assert.Equal(t, int64(3), f.Session)
				}
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrFrame), "got %v, want ErrFrame", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestIdentitySessions: a worker hosts sessions only when its identity
// says so, and only a per-user worker may.
func TestIdentitySessions(t *testing.T) {
	id := Identity{User: "alice", SessionID: "u-1", Scope: ScopeUser, Sessions: true, ServerName: "n", ServerVersion: "v"}
	got, err := ParseIdentityLine(id.Line())
	require.NoError(t, err)
	assert.True(t, got.Sessions)
	env := map[string]string{}
	for _, kv := range id.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err = IdentityFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.True(t, got.Sessions)
	assert.True(t, IsIdentityEnv(EnvSessions), "the operator must not set it")

	session := Identity{User: "alice", Scope: ScopeSession, Sessions: true}
	_, err = ParseIdentityLine(session.Line())
	assert.ErrorContains(t, err, "only a user worker hosts sessions")
	env[EnvScope] = ScopeSession
	_, err = IdentityFromEnv(func(k string) string { return env[k] })
	assert.ErrorContains(t, err, "only a user worker hosts sessions")
	env[EnvScope], env[EnvSessions] = ScopeUser, "yes"
	_, err = IdentityFromEnv(func(k string) string { return env[k] })
	assert.ErrorContains(t, err, "want true")
	line := strings.Replace(string(id.Line()), `"sessions":true`, `"sessions":"true"`, 1)
	_, err = ParseIdentityLine([]byte(line))
	assert.Error(t, err)
}

// FuzzParseFrame: whatever a line holds, a frame ParseFrame accepts
// names one session and exactly one of a message object, an open and an
// end, and writing it again reads the same.
func FuzzParseFrame(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":2,"message":{"jsonrpc":"2.0","method":"ping","id":1}}}`))
	f.Add(EndLine(3))
	f.Add(OpenLine(4, "sid"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"mcpgate/session","params":{"session":1,"message":{}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := ParseFrame(line)
		if err != nil {
			return
		}
		if fr.Session < 0 || fr.Session > MaxSession {
			t.Fatalf("session %d out of range", fr.Session)
		}
		n := 0
		if fr.Message != nil {
			n++
			if !json.Valid(fr.Message) || fr.Message[0] != '{' {
				t.Fatalf("message %q is not an object", fr.Message)
			}
		}
		if fr.End {
			n++
		}
		if fr.Open != "" {
			n++
		}
		if n != 1 {
			t.Fatalf("frame %+v is not one of message, open and end", fr)
		}
		var again []byte
		switch {
		case fr.End:
			again = EndLine(fr.Session)
		case fr.Open != "":
			again = OpenLine(fr.Session, fr.Open)
		default:
			again = AppendFrame(nil, fr.Session, fr.Message)
		}
		fr2, err := ParseFrame(again)
		if err != nil {
			t.Fatalf("a frame written again does not parse: %v", err)
		}
		if fr2.Session != fr.Session || fr2.End != fr.End || fr2.Open != fr.Open || string(fr2.Message) != string(fr.Message) {
			t.Fatalf("round trip: %+v, want %+v", fr2, fr)
		}
	})
}
