package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCombinedUnknownResourceNamesURI: a resource the combined endpoint
// cannot route (no prefix, or a server the token does not reach) is
// refused as the MCP spec asks of a resource that is not found (SEP-2164:
// -32602 with the URI in error.data.uri), the same for both, so the answer
// still does not tell which servers exist.
func TestCombinedUnknownResourceNamesURI(t *testing.T) {
	cs := threeServers(t)
	tok := cs.token(t, "eve", "db:use", "sdk:use")
	for _, uri := range []string{"note://hello", "gh+note://hello", "nope+note://hello"} {
		t.Run(uri, func(t *testing.T) {
			_, out := rawDo(t, http.MethodPost, cs.url, modernBody("1", "resources/read", `"uri":"`+uri+`"`), protoHdr, "2026-07-28",
				"Mcp-Method", "resources/read", "Mcp-Name", uri, "Authorization", "Bearer "+tok)
			var m struct {
				Error struct {
					Code int
					Data struct{ URI string }
				}
			}
			require.NoError(t, json.Unmarshal([]byte(out), &m), out)
			assert.Equal(t, -32602, m.Error.Code, out)
			assert.Equal(t, uri, m.Error.Data.URI, out)
		})
	}
}
