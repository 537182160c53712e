package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const gatewayURL = "https://mcp.example.com/mcp"

// Realistic existing files: other servers, unknown keys, comments and
// trailing commas where the client allows them.
var existing = map[string]string{
	"claude-code": `{
  "numStartups": 34,
  "theme": "dark",
  "projects": {
    "/home/u/src/app": {
      "allowedTools": [],
      "mcpServers": {}
    }
  },
  "mcpServers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": {}
    }
  },
  "userID": "4f1c"
}
`,
	"claude-desktop": `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Documents"]
    }
  }
}
`,
	"cursor": `{
  "mcpServers": {}
}
`,
	"vscode": `{
	// Servers for agent mode
	"inputs": [
		{ "type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true }
	],
	"servers": {
		"github": {
			"type": "http",
			"url": "https://api.githubcopilot.com/mcp/", // the hosted one
		},
		/* local tools */
		"fs": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"] },
	},
}
`,
	"windsurf": ``,
	"codex": `# Codex settings
model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = [
  "-y",
  "docs-mcp", # pinned later
]
[mcp_servers.docs.env]
TOKEN_FILE = "~/.docs-token"

[profiles.fast]
model = "o4-mini" # cheaper
`,
	"gemini": `{
  // UI
  "theme": "Dracula",
  "selectedAuthType": "gemini-api-key",
  "mcpServers": {
    "git": { "command": "uvx", "args": ["mcp-server-git"] } // version control
  }
}
`,
}

// want is each client's documented entry for the gateway.
var want = map[string]map[string]any{
	"claude-code":    {"type": "http", "url": gatewayURL},
	"claude-desktop": {"command": "/opt/mcpgate/bin/mcpgate", "args": []any{"bridge", "--url", gatewayURL}},
	"cursor":         {"url": gatewayURL},
	"vscode":         {"type": "http", "url": gatewayURL},
	"windsurf":       {"serverUrl": gatewayURL},
	"codex":          {"url": gatewayURL},
	"gemini":         {"httpUrl": gatewayURL},
}

// others are the servers each file held before, which must survive.
var others = map[string][]string{
	"claude-code": {"memory"}, "claude-desktop": {"filesystem"}, "vscode": {"github", "fs"},
	"codex": {"docs"}, "gemini": {"git"},
}

func testEnv(t *testing.T) Env {
	home := t.TempDir()
	return Env{Home: home, ProjectDir: filepath.Join(home, "src", "app"), GOOS: "linux",
		Getenv: func(string) string { return "" }}
}

var entry = Entry{URL: gatewayURL, Command: "/opt/mcpgate/bin/mcpgate"}

// parse reads a client's file with a real parser: encoding/json after
// removing comments and trailing commas for the JSON clients (what the
// clients themselves accept), go-toml for Codex.
func parse(t *testing.T, c Client, b []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if c.format == formatTOML {
		require.NoError(t, toml.Unmarshal(b, &m), "%s", b)
		return m
	}
	v, err := decodeJSONC(b)
	require.NoError(t, err, "%s", b)
	if c.Name == "claude-code" || c.Name == "claude-desktop" || c.Name == "cursor" || c.Name == "windsurf" {
		// These clients read plain JSON: the file must stay strict.
		require.NoError(t, json.Unmarshal(b, &m), "strict JSON: %s", b)
	}
	return v.(map[string]any)
}

func TestInstallEachClient(t *testing.T) {
	for _, c := range Clients() {
		t.Run(c.Name, func(t *testing.T) {
			env := testEnv(t)
			path := c.Path(env, User)
			orig := existing[c.Name]
			if orig != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
				require.NoError(t, os.WriteFile(path, []byte(orig), 0o640))
			}

			ch, err := Plan(c, env, User, entry)
			require.NoError(t, err)
			require.True(t, ch.Changed())
			diff := ch.Diff()
			assert.Contains(t, diff, "+", "dry-run shows the added lines")
			_, err = os.Stat(path + ".bak")
			require.ErrorIs(t, err, os.ErrNotExist, "planning writes nothing")
			require.NoError(t, ch.Apply())

			got, err := os.ReadFile(path)
			require.NoError(t, err)
			doc := parse(t, c, got)
			servers := doc[c.servers].(map[string]any)
			assert.Equal(t, normal(want[c.Name]), normal(servers["mcpgate"]), "entry in %s", got)
			for _, o := range others[c.Name] {
				assert.Contains(t, servers, o, "the other servers stay")
			}
			if orig != "" {
				bak, err := os.ReadFile(path + ".bak")
				require.NoError(t, err)
				assert.Equal(t, orig, string(bak), ".bak holds the previous contents")
				st, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "the mode is kept")
				// Every line of the original is still there, comments too.
				for _, line := range strings.Split(orig, "\n") {
					if c.Name == "cursor" && strings.TrimSpace(line) == `"mcpServers": {}` {
						continue // the empty object we fill
					}
					noComma := func(s string) string { return strings.ReplaceAll(s, ",", "") }
					assert.Contains(t, noComma(string(got)), noComma(line), "kept: %q", line)
				}
			}

			again, err := Plan(c, env, User, entry)
			require.NoError(t, err)
			assert.False(t, again.Changed(), "a second install changes nothing:\n%s", again.Diff())

			un, err := PlanUninstall(c, env, User, Entry{URL: gatewayURL})
			require.NoError(t, err)
			require.NoError(t, un.Apply())
			after, err := os.ReadFile(path)
			if orig != "" {
				require.NoError(t, err)
				assert.Equal(t, orig, string(after), "uninstall restores the file byte for byte")
			} else {
				require.ErrorIs(t, err, os.ErrNotExist, "install made the file: uninstall removes it")
			}
			un, err = PlanUninstall(c, env, User, Entry{})
			require.NoError(t, err)
			assert.False(t, un.Changed(), "a second uninstall changes nothing")
		})
	}
}

func TestInstallProjectScope(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("claude-code")
	ch, err := Plan(c, env, Project, entry)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(env.ProjectDir, ".mcp.json"), ch.Path)
	require.NoError(t, ch.Apply())
	got, err := os.ReadFile(ch.Path)
	require.NoError(t, err)
	assert.JSONEq(t, `{"mcpServers":{"mcpgate":{"type":"http","url":"`+gatewayURL+`"}}}`, string(got))

	c, _ = Lookup("windsurf")
	_, err = Plan(c, env, Project, entry)
	require.ErrorIs(t, err, ErrNoProjectFile)
}

func TestInstallKeepsTheUsersOwnKeys(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("cursor")
	path := c.Path(env, User)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(`{
  "mcpServers": {
    "mcpgate": {
      "url": "https://old.example.com/mcp",
      "disabled": false
    },
    "other": {"url": "https://other.example.com/mcp"}
  }
}
`), 0o600))
	_, err := Plan(c, env, User, entry)
	require.ErrorIs(t, err, ErrNotWritten, "an entry install did not write is not taken over")
	forced := entry
	forced.Force = true
	ch, err := Plan(c, env, User, forced)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	doc := parse(t, c, ch.After)
	assert.Equal(t, map[string]any{"url": gatewayURL, "disabled": false}, doc["mcpServers"].(map[string]any)["mcpgate"])

	// --bridge switches the entry to a stdio command, dropping url.
	bridged := entry
	bridged.Bridge = true
	ch, err = Plan(c, env, User, bridged)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	doc = parse(t, c, ch.After)
	assert.Equal(t, map[string]any{"command": entry.Command, "args": []any{"bridge", "--url", gatewayURL}, "disabled": false},
		doc["mcpServers"].(map[string]any)["mcpgate"])

	_, err = PlanUninstall(c, env, User, Entry{Name: "other", URL: gatewayURL})
	require.ErrorIs(t, err, ErrNotOurs, "someone else's server is not removed")
}

func TestInstallRefusesWhatItCannotEdit(t *testing.T) {
	for name, tc := range map[string]struct{ client, file string }{
		"broken JSON":        {"cursor", `{"mcpServers": {`},
		"not an object":      {"cursor", `[1, 2]`},
		"servers not object": {"gemini", `{"mcpServers": []}`},
		"broken TOML":        {"codex", "model = \n"},
		"codex inline table": {"codex", "[mcp_servers]\nmcpgate = { url = \"https://x/mcp\" }\n"},
	} {
		t.Run(name, func(t *testing.T) {
			env := testEnv(t)
			c, _ := Lookup(tc.client)
			path := c.Path(env, User)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o600))
			_, err := Plan(c, env, User, entry)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path, "the error names the file")
		})
	}
}

func TestInstallCodexUpdatesOnlyItsTable(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("codex")
	path := c.Path(env, User)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	orig := "model = \"o3\"\n\n[mcp_servers.mcpgate]\nurl = \"https://old.example.com/mcp\" # old\nstartup_timeout_sec = 20\n\n[mcp_servers.mcpgate.env]\nX = \"1\"\n\n[tui]\nnotifications = true\n"
	require.NoError(t, os.WriteFile(path, []byte(orig), 0o600))
	forced := entry
	forced.Force = true
	ch, err := Plan(c, env, User, forced)
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(orig, `"https://old.example.com/mcp" # old`, `"`+gatewayURL+`"`, 1), string(ch.After))
	require.NoError(t, ch.Apply())
	un, err := PlanUninstall(c, env, User, Entry{})
	require.NoError(t, err)
	assert.Equal(t, "model = \"o3\"\n\n[tui]\nnotifications = true\n", string(un.After), "the table and its sub-tables go")
}

func TestInstallFollowsSymlink(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("gemini")
	path := c.Path(env, User)
	real := filepath.Join(env.Home, "dotfiles", "gemini.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(real, []byte("{}\n"), 0o600))
	require.NoError(t, os.Symlink(real, path))
	ch, err := Plan(c, env, User, entry)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
	b, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.Contains(t, string(b), gatewayURL)
}

func TestPaths(t *testing.T) {
	env := Env{Home: "/h", ProjectDir: "/p", GOOS: "darwin", Getenv: func(string) string { return "" }}
	c, _ := Lookup("vscode")
	assert.Equal(t, "/h/Library/Application Support/Code/User/mcp.json", c.Path(env, User))
	assert.Equal(t, "/p/.vscode/mcp.json", c.Path(env, Project))
	c, _ = Lookup("claude-desktop")
	assert.Equal(t, "/h/Library/Application Support/Claude/claude_desktop_config.json", c.Path(env, User))
	env.GOOS = "linux"
	env.Getenv = func(k string) string {
		return map[string]string{"XDG_CONFIG_HOME": "/x", "CODEX_HOME": "/c"}[k]
	}
	assert.Equal(t, "/x/Claude/claude_desktop_config.json", c.Path(env, User))
	c, _ = Lookup("codex")
	assert.Equal(t, "/c/config.toml", c.Path(env, User))
}
