package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeLayout keeps the README's layout table and the usage text in
// step with the tree and the commands: every tracked top-level directory has
// a row, every row names a path that exists, and every sub-command is in the
// usage text and in the cmd/mcpgate row.
func TestReadmeLayout(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	readme := string(data)
	_, table, ok := strings.Cut(readme, "## Layout")
	require.True(t, ok, "README.md has no Layout section")
	table, _, _ = strings.Cut(table, "\n## ")

	rows := map[string]string{}
	for m := range strings.Lines(table) {
		if cells := strings.Split(m, "|"); len(cells) > 3 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			rows[strings.TrimSuffix(strings.Trim(strings.TrimSpace(cells[1]), "`"), "/")] = cells[2]
		}
	}
	for path := range rows {
		_, err := os.Stat(filepath.Join(root, path))
		assert.NoError(t, err, "README layout names %s", path)
	}

	// The tracked top-level directories (git knows which are build outputs).
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	dirs := map[string]bool{}
	for f := range strings.Lines(string(out)) {
		if d, _, ok := strings.Cut(f, "/"); ok && !strings.HasPrefix(d, ".") {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if d == "cmd" {
			continue // a row per command below
		}
		assert.Contains(t, rows, d, "README layout has no row for %s/", d)
	}
	cmds, _ := filepath.Glob(filepath.Join(root, "cmd", "*"))
	for _, c := range cmds {
		assert.Contains(t, rows, "cmd/"+filepath.Base(c), "README layout has no row for %s", c)
	}

	var names []string
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		assert.Regexp(t, regexp.MustCompile(`(?m)^  mcpgate `+name+` `), usage, "usage text lacks %s", name)
		assert.Contains(t, rows["cmd/mcpgate"], "`"+name+"`", "README's cmd/mcpgate row lacks %s", name)
	}
}
