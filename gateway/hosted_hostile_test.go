package gateway

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
)

// TestSharedSessionEndsAlone: one of a user's sessions that share her
// worker ends (DELETE) while another has a query in flight and a
// 2026-07-28 request of hers uses the same process: the other session's
// query runs on to its result, the ended session's uncommitted write is
// gone (never visible to the others), its id is 404, and the process
// serves the rest.
func TestSharedSessionEndsAlone(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{})
	a, b := rawSessionWith(t, url, "X-Test-User", "alice"), rawSessionWith(t, url, "X-Test-User", "alice")
	pid, _ := g.WorkerPid(a)
	pb, _ := g.WorkerPid(b)
	require.Equal(t, pid, pb)

	_, m := hostedCall(t, url, "alice", a, "1", "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (9005, 'a', 'a@example.com')"})
	require.NotNil(t, m["result"], "%v", m)

	finite := map[string]any{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) AS n FROM c"}
	var wg sync.WaitGroup
	var mb map[string]any
	wg.Go(func() { _, mb = hostedCall(t, url, "alice", b, "1", "query", finite) })
	waitInFlight(t, g, pid, 1)
	resp, out := rawDo(t, http.MethodDelete, url, "", sidHdr, a, protoHdr, "2025-11-25", "X-Test-User", "alice")
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	wg.Wait()
	require.NotNil(t, mb["result"], "the other session's query: %v", mb)
	assert.Contains(t, resultText(mb), "300000")

	status, _ := hostedCall(t, url, "alice", a, "2", "status", nil)
	assert.Equal(t, http.StatusNotFound, status, "the ended session still answers")
	_, m = hostedCall(t, url, "alice", b, "2", "query", map[string]any{"sql": "SELECT count(*) AS n FROM customers WHERE id = 9005"})
	assert.Contains(t, resultText(m), "0", "the ended session's uncommitted write is visible")
	now, ok := g.WorkerPid(b)
	require.True(t, ok)
	assert.Equal(t, pid, now, "the shared process ended with one of its sessions")
	resp, out = rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{},`+modernRequestMeta+`}}`,
		protoHdr, modernVersion, "Mcp-Method", "tools/call", "Mcp-Name", "status", "X-Test-User", "alice")
	assert.Equal(t, http.StatusOK, resp.StatusCode, out)
	assert.Contains(t, out, "alice")
	assert.Equal(t, 1, g.PerUserWorkers(), "the 2026-07-28 request should run in the process the session shares")
}
