package builtin

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// prestartedEnv is a pre-started worker's environment: the database
// settings and the marker, no identity.
func prestartedEnv(t testing.TB) map[string]string {
	env := map[string]string{workerproto.EnvPrestarted: "true"}
	for _, kv := range (db.Config{DSN: filepath.Join(t.TempDir(), "data", "w.db")}).Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

func run(env map[string]string, stdin string) (stdout string, err error) {
	var out, errOut bytes.Buffer
	err = Run(context.Background(), Program{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] }, Version: "test"})
	return out.String(), err
}

// TestPrestartedRefusesAnythingButItsIdentity: a pre-started worker whose
// first line is not the gateway's identity line (a client's initialize, an
// identity with a member too many, a read-only flag that is a string)
// exits with an error and answers nothing; so does one that has an
// identity variable beside the marker, or a marker it does not know.
func TestPrestartedRefusesAnythingButItsIdentity(t *testing.T) {
	good := workerproto.Identity{User: "alice", SessionID: "s", ReadOnly: true, ServerName: "n", ServerVersion: "v"}.Line()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		name, stdin string
		env         map[string]string
		want        string
	}{
		{"initialize first", initialize + "\n", nil, "identity line"},
		{"an extra member", strings.Replace(string(good), `"user"`, `"admin":true,"user"`, 1) + "\n" + initialize + "\n", nil, "unknown field"},
		{"read-only as a string", strings.Replace(string(good), `"readOnly":true`, `"readOnly":"true"`, 1) + "\n", nil, "readOnly"},
		{"no user", strings.Replace(string(good), `"user":"alice",`, "", 1) + "\n", nil, "params.user"},
		{"an identity variable beside the marker", string(good) + "\n", map[string]string{workerproto.EnvUser: "mallory"}, workerproto.EnvUser},
		{"a read-only variable beside the marker", string(good) + "\n", map[string]string{workerproto.EnvReadOnly: "false"}, workerproto.EnvReadOnly},
		{"an unknown marker value", string(good) + "\n", map[string]string{workerproto.EnvPrestarted: "1"}, "want true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := prestartedEnv(t)
			for k, v := range tt.env {
				env[k] = v
			}
			out, err := run(env, tt.stdin)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, out, "a refused worker answered")
		})
	}
}

// TestPrestartedStopsCleanly: stdin closed before any identity (the pool
// stopping an unclaimed worker) is a clean exit.
func TestPrestartedStopsCleanly(t *testing.T) {
	out, err := run(prestartedEnv(t), "")
	assert.NoError(t, err)
	assert.Empty(t, out)
}

// TestPrestartedServesItsIdentity: the identity line makes the worker its
// session's, read-only and tool grant included (a grant of query and
// status alone opens the database read-only, which refuses a writing CTE
// itself); a second identity line later is only an unknown notification
// to the MCP server, never a new identity.
func TestPrestartedServesItsIdentity(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	env := prestartedEnv(t)
	go func() {
		done <- Run(t.Context(), Program{Stdin: inR, Stdout: outW, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }, Version: "test"})
		outW.Close()
	}()
	id := workerproto.Identity{User: "alice", SessionID: "s1", Tools: []string{"query", "status"}, ServerName: "gw", ServerVersion: "9", Scope: workerproto.ScopeSession}
	_, err := inW.Write(append(id.Line(), '\n'))
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	assert.Equal(t, "gw", cs.InitializeResult().ServerInfo.Name)

	// A later identity line, as a client could send it.
	mallory := workerproto.Identity{User: "mallory", SessionID: "s9", ServerName: "x", ServerVersion: "1", Scope: workerproto.ScopeSession}
	_, err = inW.Write(append(mallory.Line(), '\n'))
	require.NoError(t, err)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"})
	require.NoError(t, err)
	sc := res.StructuredContent.(map[string]any)
	assert.Equal(t, "alice", sc["user"])
	tools, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"query", "status"}, names)
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{
		"sql": "WITH x AS (SELECT 99 AS id) INSERT INTO customers (id, name, email) SELECT id, 'x', 'x@example.org' FROM x"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	kind := res.StructuredContent.(map[string]any)["error"].(map[string]any)["kind"]
	assert.Equal(t, "readOnly", kind, "the grant did not make the database read-only")
	require.NoError(t, cs.Close())
	assert.NoError(t, <-done)
}
