package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsCombinedConformance: every conformance scenario the combined
// endpoint is expected to fail (scripts/conformance/combined-expected.txt,
// which make conformance holds the endpoint to) is named, with why, in
// docs/gateway.md's combined-endpoint section.
func TestDocsCombinedConformance(t *testing.T) {
	root := filepath.Join("..", "..")
	list, err := os.ReadFile(filepath.Join(root, "scripts", "conformance", "combined-expected.txt"))
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "gateway.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "### The combined endpoint at `/mcp`")
	require.True(t, ok, "docs/gateway.md has no combined-endpoint section")
	section, _, _ = strings.Cut(section, "\n## ")
	n := 0
	for _, line := range strings.Split(string(list), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		n++
		assert.Contains(t, section, "`"+fields[0]+"`", "docs/gateway.md does not say why the combined endpoint fails %s", fields[0])
		assert.Greater(t, len(fields), 1, "%s: the list gives no reason", fields[0])
	}
	assert.Positive(t, n)
}
