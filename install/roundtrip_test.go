package install

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// install then uninstall gives back the file byte for byte, whatever its
// shape: an empty object, no final newline, CRLF line ends.
func TestUninstallGivesBackTheFile(t *testing.T) {
	for name, tc := range map[string]struct{ client, doc string }{
		"json {}":                    {"cursor", "{}"},
		"json {} newline":            {"cursor", "{}\n"},
		"json spaced":                {"cursor", "{ }\n"},
		"json crlf":                  {"claude-code", "{\r\n  \"theme\": \"dark\"\r\n}\r\n"},
		"toml no final newline":      {"codex", `model = "gpt-5-codex"`},
		"toml crlf":                  {"codex", "model = \"gpt-5-codex\"\r\n\r\n[profiles.fast]\r\nmodel = \"o4-mini\"\r\n"},
		"toml crlf no final newline": {"codex", "model = \"gpt-5-codex\"\r\n[profiles.fast]\r\nmodel = \"o4-mini\""},
		"toml empty":                 {"codex", ""},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := Lookup(tc.client)
			env := testEnv(t)
			path := c.Path(env, User)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o600))
			ch, err := Plan(c, env, User, entry)
			require.NoError(t, err)
			require.NoError(t, ch.Apply())
			installed, _ := os.ReadFile(path)
			if len(tc.doc) > 0 && tc.doc[len(tc.doc)-1] == '\n' && containsCR(tc.doc) {
				assert.NotRegexp(t, "[^\r]\n", string(installed), "CRLF lines stay CRLF")
			}
			ch, err = PlanUninstall(c, env, User, Entry{})
			require.NoError(t, err)
			require.NoError(t, ch.Apply())
			got, _ := os.ReadFile(path)
			assert.Equal(t, tc.doc, string(got))
		})
	}
}

func containsCR(s string) bool {
	for i := range len(s) {
		if s[i] == '\r' {
			return true
		}
	}
	return false
}
