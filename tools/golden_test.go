package tools_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestToolsListGolden pins each engine's tools/list answer (names,
// descriptions, closed schemas, annotations) as the worker sends it, in
// read-write and read-only sessions. Run `go test ./tools -run Golden
// -update` after a deliberate change and review the diff.
func TestToolsListGolden(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		for _, ro := range []bool{false, true} {
			name := engine + "-readwrite"
			if ro {
				name = engine + "-readonly"
			}
			t.Run(name, func(t *testing.T) {
				cs := session(t, dbtest.Config(t, engine), "ada", ro)
				res, err := cs.ListTools(t.Context(), nil)
				require.NoError(t, err)
				slices.SortFunc(res.Tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
				got, err := json.MarshalIndent(res.Tools, "", "  ")
				require.NoError(t, err)
				got = append(got, '\n')
				path := filepath.Join("testdata", "tools-list-"+name+".json")
				if *update {
					require.NoError(t, os.MkdirAll("testdata", 0o755))
					require.NoError(t, os.WriteFile(path, got, 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err, "run with -update to create it")
				assert.Equal(t, string(want), string(got))
			})
		}
	}
}

// TestToolsetInvariants checks the built-in toolsets as data.
func TestToolsetInvariants(t *testing.T) {
	sets, err := tools.Lookup(nil)
	require.NoError(t, err)
	seen := map[string]string{}
	for _, ts := range sets {
		assert.NotEmpty(t, ts.Description, ts.Name)
		for _, tool := range ts.Tools {
			if other, dup := seen[tool.Name]; dup {
				t.Errorf("tool %s is in toolsets %s and %s", tool.Name, other, ts.Name)
			}
			seen[tool.Name] = ts.Name
			assert.NotEmpty(t, tool.Description, tool.Name)
			assert.NotNil(t, tool.Handler, tool.Name)
			if tool.ReadOnly {
				assert.False(t, tool.Destructive, "%s: read-only and destructive", tool.Name)
			}
			if tool.Safe && !tool.ReadOnly {
				// A safe tool that is not read-only may only discard the
				// session's own uncommitted work, which a read-only
				// session never has.
				assert.Equal(t, "abort", tool.Name, "%s is safe but changes things", tool.Name)
			}
			names := map[string]bool{}
			for _, p := range tool.Params {
				assert.False(t, names[p.Name], "%s: parameter %s twice", tool.Name, p.Name)
				names[p.Name] = true
			}
		}
	}
	assert.Len(t, seen, 32, "the documented tool count (docs/tools.md)")
}
