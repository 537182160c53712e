package workerproto

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdentityLineRoundTrip: what the launcher writes is what the worker
// reads, the read-only flag and the tool grant (nil: every tool; empty:
// none) included.
func TestIdentityLineRoundTrip(t *testing.T) {
	for _, id := range []Identity{
		{User: "alice", SessionID: "s1", ReadOnly: true, Toolsets: []string{"session", "browsing"}, Tools: []string{"query", "status"},
			ServerName: "gw", ServerVersion: "1.2", ServerTitle: "T", Scope: ScopeSession},
		{User: "bob", SessionID: "s2", Tools: nil, ServerName: "gw", ServerVersion: "1", Scope: ScopeUser},
		{User: "carol", SessionID: "s3", Tools: []string{}, ServerName: "gw", ServerVersion: "1", Scope: ScopeSession},
		// A user claim that tries to end the line and start another.
		{User: "eve\n{\"jsonrpc\":\"2.0\"}\r\u2028", SessionID: "s4", ServerName: "gw", ServerVersion: "1", Scope: ScopeSession},
	} {
		t.Run(id.User, func(t *testing.T) {
			assert.NotContains(t, string(id.Line()), "\n", "the identity must stay one line")
			got, err := ParseIdentityLine(id.Line())
			require.NoError(t, err)
			assert.Equal(t, id, got)
			if id.Tools != nil {
				assert.NotNil(t, got.Tools, "an empty grant must stay empty, not become every tool")
			}
		})
	}
}

// TestIdentityLineIsStrict: nothing but the launcher's line becomes an
// identity. A client's initialize, a line with an extra or a missing
// member, a read-only flag that is not a boolean: each is refused.
func TestIdentityLineIsStrict(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","method":"mcpgate/identity","params":{"user":"alice","sessionId":"s","readOnly":true,"tools":"*","serverName":"n","serverVersion":"v","scope":"session"}}`
	_, err := ParseIdentityLine([]byte(ok))
	require.NoError(t, err, "the baseline must parse")
	for _, tt := range []struct{ name, line, want string }{
		{"a client's initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, "unknown field"},
		{"another method", strings.Replace(ok, "mcpgate/identity", "notifications/initialized", 1), "mcpgate/identity"},
		{"a request, not a notification", strings.Replace(ok, `"method"`, `"id":1,"method"`, 1), "unknown field"},
		{"an unknown member", strings.Replace(ok, `"user"`, `"admin":true,"user"`, 1), "unknown field"},
		{"no user", strings.Replace(ok, `"user":"alice",`, "", 1), "params.user"},
		{"empty user", strings.Replace(ok, `"user":"alice"`, `"user":""`, 1), "params.user"},
		{"no read-only flag", strings.Replace(ok, `"readOnly":true,`, "", 1), "params.readOnly"},
		{"read-only null", strings.Replace(ok, `"readOnly":true`, `"readOnly":null`, 1), "params.readOnly"},
		{"read-only as a string", strings.Replace(ok, `"readOnly":true`, `"readOnly":"false"`, 1), "readOnly"},
		{"read-only as a number", strings.Replace(ok, `"readOnly":true`, `"readOnly":0`, 1), "readOnly"},
		{"no tools", strings.Replace(ok, `"tools":"*",`, "", 1), "params.tools"},
		{"tools null", strings.Replace(ok, `"tools":"*"`, `"tools":null`, 1), "params.tools"},
		{"tools another string", strings.Replace(ok, `"tools":"*"`, `"tools":"all"`, 1), "params.tools"},
		{"bad scope", strings.Replace(ok, `"scope":"session"`, `"scope":"admin"`, 1), "params.scope"},
		{"no params", `{"jsonrpc":"2.0","method":"mcpgate/identity"}`, "with params"},
		{"two objects", ok + ok, "after the object"},
		{"not JSON", "alice", "invalid character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIdentityLine([]byte(tt.line))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrIdentityLine), "got %v, want ErrIdentityLine", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestReadIdentityLine: the line is read alone (what follows stays in the
// reader for the server), a stdin closed at once is a clean stop, and the
// line is bounded.
func TestReadIdentityLine(t *testing.T) {
	id := Identity{User: "alice", SessionID: "s", ServerName: "n", ServerVersion: "v"}
	r := bufio.NewReaderSize(strings.NewReader(string(id.Line())+"\n{\"next\":1}\n"), MaxIdentityLine)
	got, err := ReadIdentityLine(r)
	require.NoError(t, err)
	assert.Equal(t, "alice", got.User)
	rest, _ := io.ReadAll(r)
	assert.Equal(t, "{\"next\":1}\n", string(rest))

	_, err = ReadIdentityLine(bufio.NewReaderSize(strings.NewReader(""), MaxIdentityLine))
	assert.ErrorIs(t, err, io.EOF)
	_, err = ReadIdentityLine(bufio.NewReaderSize(strings.NewReader(string(id.Line())), MaxIdentityLine))
	assert.ErrorIs(t, err, ErrIdentityLine, "a line cut short by EOF")
	_, err = ReadIdentityLine(bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", MaxIdentityLine+1)+"\n"), MaxIdentityLine))
	assert.ErrorIs(t, err, ErrIdentityLine, "over the bound")
}

// TestCheckPooledEnv: a pre-started worker with any identity variable
// besides the marker is refused.
func TestCheckPooledEnv(t *testing.T) {
	for _, name := range identityEnv {
		env := map[string]string{EnvPrestarted: "true", name: "x"}
		assert.Error(t, CheckPooledEnv(func(k string) string { return env[k] }), name)
	}
	assert.NoError(t, CheckPooledEnv(func(k string) string { return map[string]string{EnvPrestarted: "true"}[k] }))
}
