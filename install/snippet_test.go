package install

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnippetIsWhatPlanWrites holds each client's snippet to the entry Plan
// writes into an empty file: the same servers key, name and body.
func TestSnippetIsWhatPlanWrites(t *testing.T) {
	e := Entry{Name: "team", URL: "https://mcp.example.com/mcp", Command: "/usr/local/bin/mcpgate"}
	env := Env{Home: t.TempDir(), ProjectDir: t.TempDir(), GOOS: "linux"}
	for _, c := range Clients() {
		t.Run(c.Name, func(t *testing.T) {
			s, err := c.Snippet(e)
			require.NoError(t, err)
			ch, err := Plan(c, env, User, e)
			require.NoError(t, err)
			got, err := decode(c, []byte(s))
			require.NoError(t, err)
			want, err := decode(c, ch.After)
			require.NoError(t, err)
			gotEntry, ok := serverEntry(got, c.servers, "team")
			require.True(t, ok, "snippet %s", s)
			wantEntry, _ := serverEntry(want, c.servers, "team")
			assert.Equal(t, normal(wantEntry), normal(gotEntry))
		})
	}
}

// TestCommandAndLinkQuote checks that a hostile name or URL cannot leave
// its argument or its link parameter.
func TestCommandAndLinkQuote(t *testing.T) {
	e := Entry{Name: "x'; rm -rf ~ #", URL: "https://mcp.example.com/mcp"}
	claude, _ := Lookup("claude-code")
	assert.Equal(t, `claude mcp add --transport http 'x'\''; rm -rf ~ #' https://mcp.example.com/mcp`, claude.Command(e))
	vscode, _ := Lookup("vscode")
	cmd := vscode.Command(e)
	require.True(t, strings.HasPrefix(cmd, "code --add-mcp '"), cmd)
	link := vscode.InstallLink(e)
	raw, ok := strings.CutPrefix(link, "vscode:mcp/install?")
	require.True(t, ok, link)
	js, err := url.QueryUnescape(raw)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &v))
	assert.Equal(t, map[string]any{"name": e.Name, "type": "http", "url": e.URL}, v)

	cursor, _ := Lookup("cursor")
	u, err := url.Parse(cursor.InstallLink(e))
	require.NoError(t, err)
	assert.Equal(t, "cursor", u.Scheme)
	assert.Equal(t, e.Name, u.Query().Get("name"))
	cfg, err := base64.StdEncoding.DecodeString(u.Query().Get("config"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"url":"https://mcp.example.com/mcp"}`, string(cfg))

	desktop, _ := Lookup("claude-desktop")
	assert.Empty(t, desktop.Command(e), "a bridge client has no command of its own")
	assert.Empty(t, desktop.InstallLink(e))
	assert.Empty(t, claude.Command(Entry{URL: "javascript:alert(1)"}), "a URL install refuses gets no command")
}

func TestSnippetTOML(t *testing.T) {
	codex, _ := Lookup("codex")
	s, err := codex.Snippet(Entry{URL: "https://mcp.example.com/mcp"})
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, toml.Unmarshal([]byte(s), &v))
	assert.Equal(t, map[string]any{"mcp_servers": map[string]any{"mcpgate": map[string]any{"url": "https://mcp.example.com/mcp"}}}, v)
}
