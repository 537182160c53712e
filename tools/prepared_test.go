package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// transcript serves srv over pipes and returns its answers, one per line,
// to initialize, tools/list, and a tools/call of each of calls (with no
// arguments).
func transcript(t *testing.T, srv *mcp.Server, calls []string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = tools.Serve(ctx, srv, inR, outW)
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	var answers []string
	ask := func(id int, method, params string) {
		_, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		require.NoError(t, err)
		line, err := out.ReadString('\n')
		require.NoError(t, err)
		answers = append(answers, line)
	}
	ask(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`)
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	ask(2, "tools/list", `{}`)
	for i, name := range calls {
		p, err := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{}})
		require.NoError(t, err)
		ask(3+i, "tools/call", string(p))
	}
	inW.Close()
	return answers
}

// TestPreparedAnswersAsNewServer is the pre-started worker's hostile
// case: a server prepared with every tool before the identity and then
// narrowed (Prepared.Server) answers initialize, tools/list and a call of
// every tool it must not serve byte for byte as NewServer of the same
// options: a read-only or grant-limited session neither sees nor runs a
// tool it lacks. The prepared server's handlers run as the identity's
// user (status).
func TestPreparedAnswersAsNewServer(t *testing.T) {
	engines := map[string]db.Engine{db.SQLite: sqlite.Engine{}, db.Postgres: postgres.Engine{}}
	all, err := tools.ToolNames(nil)
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	for _, engine := range dbtest.Engines() {
		cfg := dbtest.Config(t, engine)
		for _, tt := range []struct {
			name     string
			readOnly bool
			tools    []string
		}{
			{"readwrite", false, nil},
			{"readonly", true, nil},
			{"grant query and status", false, []string{"query", "status"}},
			{"read-only grant of a writing tool", true, []string{"execute_sql", "status"}},
			{"empty grant", false, []string{}},
			{"grant of an unknown tool", false, []string{"no_such_tool", "status"}},
		} {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				open := func() *db.Session {
					s, err := db.Open(t.Context(), engines[engine], cfg, "ada", tt.readOnly)
					require.NoError(t, err)
					t.Cleanup(func() { s.Close() })
					return s
				}
				opts := tools.Options{User: "ada", SessionID: "s1", ReadOnly: tt.readOnly, Tools: tt.tools,
					ServerName: "gw", ServerVersion: "9", ServerTitle: "Gate", Logger: logger}
				opts.DB = open()
				fresh, err := tools.NewServer(opts)
				require.NoError(t, err)
				p, err := tools.Prepare(engine, logger)
				require.NoError(t, err)
				opts.DB = open()
				prepared, err := p.Server(opts)
				require.NoError(t, err)

				// Every tool the fresh server does not list, and status.
				var listed struct {
					Result struct{ Tools []struct{ Name string } }
				}
				want := transcript(t, fresh, nil)
				require.NoError(t, json.Unmarshal([]byte(want[1]), &listed))
				var calls []string
				for _, n := range all {
					if !slices.ContainsFunc(listed.Result.Tools, func(x struct{ Name string }) bool { return x.Name == n }) {
						calls = append(calls, n)
					}
				}
				hidden := len(calls)
				if !slices.Contains(calls, "status") {
					calls = append(calls, "status")
				}
				want = transcript(t, fresh, calls)
				got := transcript(t, prepared, calls)
				require.Len(t, got, len(want))
				assert.Equal(t, want[0], got[0], "initialize")
				assert.Equal(t, want[1], got[1], "tools/list")
				for i, name := range calls {
					if i == hidden {
						assert.Contains(t, got[2+i], `"user":"ada"`)
						assert.Contains(t, got[2+i], fmt.Sprintf(`"readOnly":%t`, tt.readOnly))
						continue
					}
					assert.Equal(t, want[2+i], got[2+i], "tools/call %s", name)
					assert.Contains(t, got[2+i], "unknown tool", "tools/call %s", name)
				}
			})
		}
	}
}

// TestPreparedOnlyOnce: a prepared server is one session's; a second
// Server call, or options it was not prepared for (a toolset selection),
// gets a server of its own that answers as NewServer's.
func TestPreparedOnlyOnce(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	cfg := dbtest.Config(t, db.SQLite)
	open := func(ro bool) *db.Session {
		s, err := db.Open(t.Context(), sqlite.Engine{}, cfg, "ada", ro)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	p, err := tools.Prepare(db.SQLite, logger)
	require.NoError(t, err)
	first, err := p.Server(tools.Options{User: "ada", DB: open(false), Logger: logger})
	require.NoError(t, err)
	for _, opts := range []tools.Options{
		{User: "bob", ReadOnly: true, DB: open(true), Logger: logger},
		{User: "bob", Toolsets: []string{"session"}, DB: open(false), Logger: logger},
	} {
		second, err := p.Server(opts)
		require.NoError(t, err)
		assert.NotSame(t, first, second)
		fresh, err := tools.NewServer(opts)
		require.NoError(t, err)
		assert.Equal(t, transcript(t, fresh, []string{"execute_sql"}), transcript(t, second, []string{"execute_sql"}))
	}
}

// TestWarm: the pre-start warm-up's throwaway session ends cleanly.
func TestWarm(t *testing.T) {
	require.NoError(t, tools.Warm(t.Context()))
}
