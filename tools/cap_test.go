package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapResult(t *testing.T) {
	long := strings.Repeat("é", MaxFieldBytes) // 2 bytes a rune: twice the cap
	type column struct {
		Name    string `json:"name"`
		Comment string `json:"comment"`
	}
	small := map[string]any{"ddl": "CREATE TABLE t (a int)"}
	assert.Equal(t, small, capResult(small), "a small result is left alone")
	fits := map[string]any{"a": strings.Repeat("x", MaxFieldBytes), "b": 1}
	assert.Equal(t, fits, capResult(fits), "a result whose strings fit is left alone")

	in := struct {
		Table   string   `json:"table"`
		Columns []column `json:"columns"`
		Total   int      `json:"total"`
	}{"t", []column{{"a", "short"}, {"b", long}}, 2}
	out, ok := capResult(in).(json.RawMessage)
	require.True(t, ok, "got %T, want the cut JSON", capResult(in))
	assert.Less(t, len(out), MaxFieldBytes+1024)
	assert.True(t, strings.HasPrefix(string(out), `{"table":"t","columns":[{"name":"a","comment":"short"},{"name":"b","comment":"ééé`), "key order is kept: %.80s", out)
	var got struct {
		Columns []column `json:"columns"`
		Total   int      `json:"total"`
		Cut     []string `json:"truncatedFields"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, 2, got.Total)
	assert.Equal(t, []string{"columns[1].comment"}, got.Cut)
	assert.True(t, strings.HasSuffix(got.Columns[1].Comment, "… [524288 bytes]"), "the cut says the true length")

	many := map[string]any{}
	for i := range 100 {
		many[strings.Repeat("k", i+1)] = strings.Repeat("v", MaxFieldBytes+1)
	}
	out, ok = capResult(many).(json.RawMessage)
	require.True(t, ok)
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Len(t, got.Cut, maxCutPaths+1, "20 paths, then …")
	assert.Equal(t, "…", got.Cut[maxCutPaths])

	huge := make([]string, MaxStructuredBytes/db.DefaultMaxCell+10)
	for i := range huge {
		huge[i] = strings.Repeat("x", 2*db.DefaultMaxCell)
	}
	res, ok := capResult(map[string]any{"rows": huge}).(map[string]any)
	require.True(t, ok, "over the whole cap even at the cell cap: left out")
	assert.Equal(t, []string{"*"}, res[TruncatedFields])
}

func TestCapMessage(t *testing.T) {
	res := errorResult(Errorf(KindSQLError, "bad value %q", strings.Repeat("x", 40<<20)))
	b, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(b), 3*MaxErrorBytes, "a 40 MB value in an error message")
	msg := res.StructuredContent.(map[string]any)["error"].(map[string]any)["message"].(string)
	assert.Contains(t, msg, "… [41943052 bytes]")
}
