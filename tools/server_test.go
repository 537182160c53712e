package tools

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture is a toolset that exercises the framework without a database.
func fixture() *Toolset {
	return &Toolset{Name: "fixture", Tools: []Tool{
		{
			Name: "echo", Safe: true, ReadOnly: true,
			Params: []Param{
				{Name: "text", Type: String, Required: true},
				{Name: "times", Type: Integer, Min: 1, Max: 3},
				{Name: "loud", Type: Boolean},
			},
			Handler: func(_ context.Context, _ *Env, a Args) (*Result, error) {
				s := strings.Repeat(a.String("text"), int(a.Int("times", 1)))
				if a.Bool("loud", false) {
					s = strings.ToUpper(s)
				}
				return &Result{Text: s, Structured: map[string]any{"echo": s}}, nil
			},
		},
		{
			Name: "fail", Destructive: true,
			Handler: func(context.Context, *Env, Args) (*Result, error) {
				return nil, Errorf(KindRefused, "fail refuses; try echo")
			},
		},
		{
			Name: "boom",
			Handler: func(context.Context, *Env, Args) (*Result, error) {
				panic("boom")
			},
		},
		{
			Name: "plain", Safe: true, ReadOnly: true,
			Handler: func(context.Context, *Env, Args) (*Result, error) {
				return nil, errors.New("something broke")
			},
		},
		{
			Name: "big", Safe: true, ReadOnly: true,
			Handler: func(context.Context, *Env, Args) (*Result, error) {
				return &Result{Text: strings.Repeat("0123456789\n", 100)}, nil
			},
		},
	}}
}

// connect serves sets with opts and returns a connected go-sdk client.
func connect(t *testing.T, opts Options, sets ...*Toolset) *mcp.ClientSession {
	t.Helper()
	srv, err := newServer(opts, sets)
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ctx := t.Context()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

// errorKind returns structuredContent.error.kind of an isError result.
func errorKind(t *testing.T, res *mcp.CallToolResult) (kind, message string) {
	t.Helper()
	require.True(t, res.IsError, "got a success, want isError")
	sc, ok := res.StructuredContent.(map[string]any)
	require.True(t, ok, "structuredContent: got %T, want an object", res.StructuredContent)
	e, ok := sc["error"].(map[string]any)
	require.True(t, ok, "structuredContent.error: got %v", sc)
	kind, _ = e["kind"].(string)
	message, _ = e["message"].(string)
	return kind, message
}

func TestSchemasAreClosed(t *testing.T) {
	cs := connect(t, Options{MaxResultBytes: 200}, fixture(), sessionToolset())
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.Tools)
	for _, tool := range res.Tools {
		s, ok := tool.InputSchema.(map[string]any)
		require.True(t, ok, "%s: schema %T", tool.Name, tool.InputSchema)
		assert.Equal(t, false, s["additionalProperties"], "%s: additionalProperties", tool.Name)
		assert.Contains(t, s, "required", "%s: required", tool.Name)
		require.NotNil(t, tool.Annotations, "%s: annotations", tool.Name)
	}
}

func TestArgumentErrors(t *testing.T) {
	cs := connect(t, Options{}, fixture())
	tests := []struct {
		name string
		args any
		want string // in the message
	}{
		{"unknown", map[string]any{"text": "a", "txet": "b"}, `unknown argument "txet"`},
		{"missing", map[string]any{}, `missing required argument "text"`},
		{"missing with none given", nil, `missing required argument "text"`},
		{"wrong type", map[string]any{"text": 5}, `argument "text" must be a string`},
		{"not an integer", map[string]any{"text": "a", "times": 1.5}, `argument "times" must be an integer`},
		{"out of range", map[string]any{"text": "a", "times": 9}, `argument "times" must be between 1 and 3`},
		{"wrong boolean", map[string]any{"text": "a", "loud": "yes"}, `argument "loud" must be a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, msg := errorKind(t, call(t, cs, "echo", tt.args))
			assert.Equal(t, string(KindInvalidParams), kind)
			assert.Contains(t, msg, tt.want)
			if strings.HasPrefix(tt.want, "unknown") || strings.HasPrefix(tt.want, "missing") {
				assert.Contains(t, msg, "echo takes text (string), times (integer, optional), loud (boolean, optional)")
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		res := call(t, cs, "echo", map[string]any{"text": "ab", "times": 2, "loud": true})
		require.False(t, res.IsError)
		assert.Equal(t, "ABAB", res.Content[0].(*mcp.TextContent).Text)
		assert.Equal(t, map[string]any{"echo": "ABAB"}, res.StructuredContent)
	})
}

func TestFailures(t *testing.T) {
	cs := connect(t, Options{MaxResultBytes: 200}, fixture())
	tests := []struct {
		tool, kind, msg string
	}{
		{"fail", "refused", "fail refuses; try echo"},
		{"boom", "other", "boom failed with an internal error"},
		{"plain", "other", "something broke"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			kind, msg := errorKind(t, call(t, cs, tt.tool, nil))
			assert.Equal(t, tt.kind, kind)
			assert.Contains(t, msg, tt.msg)
		})
	}
	t.Run("still serving after a panic", func(t *testing.T) {
		assert.False(t, call(t, cs, "echo", map[string]any{"text": "x"}).IsError)
	})
	t.Run("unknown tool is a protocol error", func(t *testing.T) {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"})
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code)
	})
	t.Run("long result is capped with the true total", func(t *testing.T) {
		text := call(t, cs, "big", nil).Content[0].(*mcp.TextContent).Text
		assert.LessOrEqual(t, len(text), 260)
		assert.Contains(t, text, "output truncated: showing")
		assert.Contains(t, text, "of 1100 bytes")
	})
}

func TestReadOnlyRegistersOnlySafeTools(t *testing.T) {
	cs := connect(t, Options{ReadOnly: true}, fixture(), sessionToolset())
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
	}
	slices.Sort(got)
	assert.Equal(t, []string{"big", "echo", "plain", "status"}, got) // abort and refresh need a database
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fail"})
	assert.Error(t, err, "a gated tool must not exist in a read-only session")
}

// TestToolsRegistersOnlyGranted: a worker limited to a policy's
// grant registers only those tools, gated or not; an empty grant registers
// none (fail-closed).
func TestToolsRegistersOnlyGranted(t *testing.T) {
	list := func(opts Options) []string {
		cs := connect(t, opts, fixture(), sessionToolset())
		res, err := cs.ListTools(t.Context(), nil)
		require.NoError(t, err)
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		return got
	}
	assert.Equal(t, []string{"echo", "fail"}, list(Options{Tools: []string{"echo", "fail", "no_such_tool"}}))
	assert.Equal(t, []string{"echo"}, list(Options{Tools: []string{"echo", "fail"}, ReadOnly: true}), "read-only still drops gated tools")
	assert.Empty(t, list(Options{Tools: []string{}}))
}

// TestOnlySafe: a grant of safe tools only opens the database read-only; a
// gated tool of the toolsets makes it writable; names the toolsets do not
// hold do not count (the worker never registers them).
func TestOnlySafe(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  bool
	}{
		{[]string{"query", "list_tables", "status"}, true},
		{[]string{"query", "apply_ddl"}, false},
		{[]string{"commit"}, false},
		{[]string{"no_such_tool"}, true},
		{nil, true},
	} {
		got, err := OnlySafe(nil, tc.names)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v", tc.names)
	}
	_, err := OnlySafe([]string{"nope"}, nil)
	assert.Error(t, err)
}

func TestAnnotations(t *testing.T) {
	cs := connect(t, Options{}, fixture())
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		a := tool.Annotations
		switch tool.Name {
		case "echo":
			assert.True(t, a.ReadOnlyHint)
			assert.False(t, *a.DestructiveHint)
		case "fail":
			assert.False(t, a.ReadOnlyHint)
			assert.True(t, *a.DestructiveHint)
		}
		assert.False(t, *a.OpenWorldHint, tool.Name)
	}
}

func TestServerIdentity(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want mcp.Implementation
	}{
		{"defaults", Options{ServerVersion: "1.2.3"}, mcp.Implementation{Name: "mcpgate", Version: "1.2.3"}},
		{"operator's", Options{ServerName: "acme", ServerVersion: "2", ServerTitle: "Acme sandbox"}, mcp.Implementation{Name: "acme", Version: "2", Title: "Acme sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, tt.opts, sessionToolset())
			got := cs.InitializeResult().ServerInfo
			assert.Equal(t, tt.want, *got)
			sc := call(t, cs, "status", nil).StructuredContent.(map[string]any)
			server := sc["server"].(map[string]any)
			_, hasTitle := server["title"]
			assert.Equal(t, tt.want.Title != "", hasTitle, "status server.title present")
		})
	}
}

func TestStatusWithoutDatabase(t *testing.T) {
	cs := connect(t, Options{User: "ada", SessionID: "s1", ReadOnly: true}, sessionToolset())
	res := call(t, cs, "status", nil)
	require.False(t, res.IsError)
	sc := res.StructuredContent.(map[string]any)
	assert.Equal(t, "ada", sc["user"])
	assert.Equal(t, "s1", sc["sessionId"])
	assert.Equal(t, true, sc["readOnly"])
}

func TestLookup(t *testing.T) {
	_, err := Lookup([]string{"session", "bogus"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown toolset "bogus"`)
	sets, err := Lookup(nil)
	require.NoError(t, err)
	assert.Len(t, sets, len(Builtin()))
	_, err = SafeToolNames([]string{"nope"})
	assert.Error(t, err)
}

func TestSafeToolNames(t *testing.T) {
	got, err := SafeToolNames([]string{"session"})
	require.NoError(t, err)
	assert.Equal(t, []string{"abort", "begin", "refresh", "status"}, got)
	got, err = SafeToolNames(nil)
	require.NoError(t, err)
	assert.Contains(t, got, "status")
	assert.NotContains(t, got, "commit")
}

// TestUndoToolNames: abort is safe in a read-only session but undoes a
// read-write one's work, so the gateway must know it.
func TestUndoToolNames(t *testing.T) {
	got, err := UndoToolNames(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"abort"}, got)
	got, err = UndoToolNames([]string{"listing"})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestNeedsDatabase(t *testing.T) {
	db := &Toolset{Name: "dbonly", Tools: []Tool{{Name: "q", NeedsDB: true}}}
	_, err := newServer(Options{Toolsets: []string{"dbonly"}}, []*Toolset{db})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `toolset "dbonly" needs a database`)
	cs := connect(t, Options{}, sessionToolset())
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, 1, "without a database only status is served")
	assert.Equal(t, "status", res.Tools[0].Name)
}
