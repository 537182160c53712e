package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// TestUniqueProgressTokenFoldedKeys: a progress token key spelled in
// another case (which encoding/json, and so a worker built on it, reads
// as progressToken) never reaches the worker: it gets the one unique
// token, and the client's value is kept to restore.
func TestUniqueProgressTokenFoldedKeys(t *testing.T) {
	for _, tc := range []struct{ meta, orig string }{
		{`{"ProgressToken":"mcpgate-progress-1"}`, `"mcpgate-progress-1"`},
		{`{"progressToken":"a","PROGRESSTOKEN":"mcpgate-progress-1"}`, `"a"`},
		{`{"progreſſToken":"mcpgate-progress-1"}`, `"mcpgate-progress-1"`},
	} {
		m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":` + tc.meta + `}}`))
		require.NoError(t, err)
		out, orig, ok := uniqueProgressToken(m, 9)
		require.True(t, ok, tc.meta)
		assert.JSONEq(t, tc.orig, string(orig), tc.meta)
		assert.JSONEq(t, `{"name":"x","_meta":{"progressToken":"mcpgate-progress-9"}}`, string(out.Params), tc.meta)
	}
}
