package install

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Adding a member and removing it again gives back the original bytes, in
// every layout people write.
func TestJSONSetRemoveInverse(t *testing.T) {
	body := map[string]any{"url": gatewayURL}
	for name, doc := range map[string]string{
		"one line":         `{"mcpServers": {"a": {"url": "x"}}}`,
		"one line spaced":  `{ "mcpServers": { "a": 1 } }`,
		"trailing comma":   "{\n  \"mcpServers\": {\n    \"a\": 1,\n  },\n}\n",
		"note after last":  "{\n  \"mcpServers\": {\n    \"a\": 1 // keep me\n  }\n}\n",
		"note after comma": "{\n  \"mcpServers\": {\n    \"a\": 1, // keep me\n  }\n}\n",
		"comment only":     "{\n  \"mcpServers\": {\n    // none yet\n  }\n}\n",
		"block comments":   "/* head */ {\n\t\"mcpServers\": { /* x */ \"a\": [1, {\"b\": \"}\"}] },\n\t\"z\": null\n} // tail\n",
		"escaped key":      `{"mcpServers": {"a\"b": "\u00e9"}, "x": -1.5e3}`,
		"CRLF":             "{\r\n  \"mcpServers\": {\r\n    \"a\": true\r\n  }\r\n}\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			added, err := setJSONEntry([]byte(doc), "mcpServers", "mcpgate", body)
			require.NoError(t, err)
			v, err := decodeJSONC(added)
			require.NoError(t, err, "%s", added)
			assert.Equal(t, body, v.(map[string]any)["mcpServers"].(map[string]any)["mcpgate"], "%s", added)
			if strings.Contains(doc, "\r\n") {
				assert.NotContains(t, strings.ReplaceAll(string(added), "\r\n", ""), "\n", "line ends kept")
			}
			removed, err := removeJSONEntry(added, "mcpServers", "mcpgate")
			require.NoError(t, err)
			assert.Equal(t, doc, string(removed), "after adding:\n%s", added)
		})
	}
}

func TestParseJSONCRejects(t *testing.T) {
	for _, doc := range []string{`{"a" 1}`, `{"a": 1 "b": 2}`, `{"a": tru}`, `{"a": "x`, `{/* open`, `{"a": 1}}`, `[1 2]`} {
		_, err := parseJSONC([]byte(doc))
		assert.ErrorIs(t, err, errSyntax, doc)
	}
}

func TestUnifiedDiff(t *testing.T) {
	assert.Equal(t, "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n", unified("a", "b", "", "x\ny\n"))
	assert.Equal(t, "--- a\n+++ b\n@@ -1,3 +1,4 @@\n 1\n 2\n+n\n 3\n", unified("a", "b", "1\n2\n3\n", "1\n2\nn\n3\n"))
	assert.Equal(t, "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n", unified("a", "b", "x\ny\n", ""))
}
