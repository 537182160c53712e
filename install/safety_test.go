package install

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, path, doc string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(doc), mode))
}

// A server of the same name that install did not write (the user's own
// stdio "mcpgate") is neither replaced nor removed without Force.
func TestInstallDoesNotTakeOverAServer(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("claude-code")
	path := c.Path(env, User)
	own := `{
  "mcpServers": {
    "mcpgate": {"type": "stdio", "command": "/usr/local/bin/mcpgate", "args": ["bridge", "--url", "https://mcp.example.com/mcp"]}
  }
}
`
	writeFile(t, path, own, 0o600)
	_, err := Plan(c, env, User, entry)
	require.ErrorIs(t, err, ErrNotWritten)
	assert.ErrorContains(t, err, "--force")
	_, err = PlanUninstall(c, env, User, Entry{})
	require.ErrorIs(t, err, ErrNotWritten)
	_, err = PlanUninstall(c, env, User, Entry{URL: gatewayURL})
	require.ErrorIs(t, err, ErrNotWritten, "pointing at the URL does not make it ours")
	got, _ := os.ReadFile(path)
	assert.Equal(t, own, string(got))

	// One that install wrote and the user changed since is not ours either.
	ch, err := Plan(c, env, User, Entry{Name: "gw", URL: gatewayURL})
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	b, _ := os.ReadFile(path)
	writeFile(t, path, `{"numStartups": 3,`+string(b[1:]), 0o600) // the client rewrote the file: still ours
	un, err := PlanUninstall(c, env, User, Entry{Name: "gw"})
	require.NoError(t, err, "the entry itself is unchanged")
	assert.True(t, un.Changed())

	// --force replaces it.
	forced := entry
	forced.Force = true
	ch, err = Plan(c, env, User, forced)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	un, err = PlanUninstall(c, env, User, Entry{})
	require.NoError(t, err, "after a forced install the entry is install's")
	require.NoError(t, un.Apply())
}

// Installs of different names into one file at the same time all land:
// each reads the file again under the lock before replacing it.
func TestParallelInstallsKeepEveryEntry(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			env := testEnv(t)
			c, _ := Lookup("claude-code")
			path := c.Path(env, User)
			writeFile(t, path, existing["claude-code"], 0o600)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					ch, err := Plan(c, env, User, Entry{Name: fmt.Sprintf("gw%d", i), URL: gatewayURL})
					if assert.NoError(t, err) {
						assert.NoError(t, ch.Apply())
					}
				})
			}
			wg.Wait()
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			servers := parse(t, c, b)["mcpServers"].(map[string]any)
			for i := range 4 {
				assert.Contains(t, servers, fmt.Sprintf("gw%d", i), "lost in %s", b)
			}
			assert.Contains(t, servers, "memory")
			for i := range 4 {
				un, err := PlanUninstall(c, env, User, Entry{Name: fmt.Sprintf("gw%d", i)})
				require.NoError(t, err)
				require.NoError(t, un.Apply())
			}
			b, _ = os.ReadFile(path)
			assert.Equal(t, existing["claude-code"], string(b), "four uninstalls give back the file")
		})
	}
}

// A client that rewrites its file between Plan and Apply (Claude Code
// rewrites ~/.claude.json on its own) keeps its change: Apply plans again
// from the file as it is then.
func TestApplyPlansAgainAfterTheClientWrote(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("claude-code")
	path := c.Path(env, User)
	writeFile(t, path, "{\n  \"numStartups\": 1\n}\n", 0o600)
	ch, err := Plan(c, env, User, entry)
	require.NoError(t, err)
	writeFile(t, path, "{\n  \"numStartups\": 2\n}\n", 0o600)
	require.NoError(t, ch.Apply())
	doc := parse(t, c, must(os.ReadFile(path)))
	assert.Equal(t, float64(2), doc["numStartups"])
	assert.Contains(t, doc["mcpServers"], "mcpgate")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A read-only file is refused, not overwritten; a symlink whose target is
// missing is refused, not replaced by a file.
func TestInstallRefusesReadOnlyAndDanglingLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	env := testEnv(t)
	c, _ := Lookup("cursor")
	path := c.Path(env, User)
	writeFile(t, path, "{}\n", 0o444)
	ch, err := Plan(c, env, User, entry)
	require.NoError(t, err, "a dry run may show the change")
	require.ErrorContains(t, ch.Apply(), "read-only")
	assert.Equal(t, "{}\n", string(must(os.ReadFile(path))))
	_, err = os.Stat(path + ".bak")
	assert.ErrorIs(t, err, os.ErrNotExist, "no backup announced or written")

	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(filepath.Join(env.Home, "dotfiles", "cursor.json"), path))
	_, err = Plan(c, env, User, entry)
	require.ErrorContains(t, err, "does not exist")
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
}

// Every change keeps the previous contents in a backup of its own.
func TestBackupsKeepEveryVersion(t *testing.T) {
	env := testEnv(t)
	c, _ := Lookup("gemini")
	path := c.Path(env, User)
	ch, err := Plan(c, env, User, entry)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	assert.Empty(t, ch.Backup, "a new file has no previous contents")
	v1 := string(must(os.ReadFile(path)))

	other := entry
	other.URL = "https://other.example.com/mcp"
	ch, err = Plan(c, env, User, other)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	assert.Equal(t, path+".bak", ch.Backup)
	v2 := string(must(os.ReadFile(path)))

	ch, err = PlanUninstall(c, env, User, Entry{})
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	assert.Equal(t, path+".bak.1", ch.Backup)
	assert.Equal(t, v1, string(must(os.ReadFile(path+".bak"))))
	assert.Equal(t, v2, string(must(os.ReadFile(path+".bak.1"))))
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the file install made is gone again")
}

func TestInstallChecksTheURL(t *testing.T) {
	c, _ := Lookup("cursor")
	for u, want := range map[string]error{
		"http://mcp.example.com/mcp":    nil, // an error, checked below
		"https://mcp.example.com/":      ErrNotMCPPath,
		"https://mcp.example.com/api":   ErrNotMCPPath,
		"https://mcp.example.com/mcp":   nil,
		"https://mcp.example.com/mcp/":  nil,
		"https://mcp.example.com/mcp/x": nil,
		"https://h.example/gw/mcp":      nil,
		"http://127.0.0.1:8000/mcp":     nil,
		"http://localhost:8000/mcp":     nil,
	} {
		_, err := Plan(c, testEnv(t), User, Entry{URL: u})
		switch {
		case u == "http://mcp.example.com/mcp":
			assert.ErrorContains(t, err, "https", u)
		case want != nil:
			assert.ErrorIs(t, err, want, u)
		default:
			assert.NoError(t, err, u)
		}
	}
	_, err := Plan(c, testEnv(t), User, Entry{URL: "https://mcp.example.com/api", AnyPath: true})
	assert.NoError(t, err, "--any-path accepts another path")
}

// A lock file the user cannot open (one "sudo mcpgate install" left) is
// reported as such, not as another install running.
func TestInstallLockFileUnusable(t *testing.T) {
	env := testEnv(t)
	require.NoError(t, os.MkdirAll(lockPath(env), 0o700))
	c, _ := Lookup("claude-code")
	ch, err := Plan(c, env, User, entry)
	require.NoError(t, err)
	err = ch.Apply()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "another mcpgate install is running")
	assert.Contains(t, err.Error(), lockPath(env))
}
