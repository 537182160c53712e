package doctor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsNameEveryCheck keeps docs/client.md's tables of checks complete:
// every check name this package reports appears there as `name`.
func TestDocsNameEveryCheck(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "client.md"))
	require.NoError(t, err)
	doc := string(data)
	// A check is named by a literal passed to ok, warn or fail, or assigned
	// to a variable named check.
	named := regexp.MustCompile(`(?:\.(?:ok|warn|fail)\(|check :?= )"([^"]+)"`)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			seen++
			name := m[1]
			if strings.HasSuffix(name, " ") { // a prefix: "keycloak "+scope
				assert.True(t, strings.Contains(doc, "`"+name), "%s: check %q… is not in docs/client.md", f, name)
				continue
			}
			assert.True(t, strings.Contains(doc, "`"+name+"`"), "%s: check %q is not in docs/client.md", f, name)
		}
	}
	assert.Greater(t, seen, 40, "the pattern no longer finds the checks")
}
