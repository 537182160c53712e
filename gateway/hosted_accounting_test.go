package gateway

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
)

// TestSharedWorkerAccountingReturnsToZero: whatever mix of sessions and
// 2026-07-28 requests a worker that hosts sessions served (started by a
// session, counted by a request, its sessions ended by DELETE and by the
// reaper, the worker reaped), once it is gone the shared Accounting holds
// nothing of its user: no binding, no database connection.
func TestSharedWorkerAccountingReturnsToZero(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	acct := NewAccounting()
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{Now: clock, SessionIdleTimeout: 10 * time.Minute,
		Accounting: acct, DB: DBBudget{Max: 20, MaxPerUser: 10, PerSession: 1, PerUserWorker: 5}})
	modern := func() {
		resp, body := rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{},`+modernRequestMeta+`}}`,
			protoHdr, modernVersion, "Mcp-Method", "tools/call", "Mcp-Name", "status", "X-Test-User", "alice")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}

	a := rawSessionWith(t, url, "X-Test-User", "alice")
	b := rawSessionWith(t, url, "X-Test-User", "alice")
	live, _, dbUsed := acct.usage()
	assert.Equal(t, []int{2, 3}, []int{live, dbUsed}, "two sessions and their worker's first connection")
	modern()
	live, _, dbUsed = acct.usage()
	assert.Equal(t, []int{3, 7}, []int{live, dbUsed}, "the request counts the worker, with its whole share")
	modern()
	live, _, dbUsed = acct.usage()
	assert.Equal(t, []int{3, 7}, []int{live, dbUsed}, "counted once")

	rawDo(t, http.MethodDelete, url, "", sidHdr, a, protoHdr, "2025-11-25", "X-Test-User", "alice")
	advance(11 * time.Minute)
	g.reapIdle() // b goes; the worker hosted it until now
	advance(11 * time.Minute)
	g.reapIdle() // the worker goes
	_, ok := g.WorkerPid(b)
	assert.False(t, ok)
	require.Zero(t, g.PerUserWorkers())
	live, perUser, dbUsed := acct.usage()
	assert.Equal(t, []int{0, 0, 0}, []int{live, perUser, dbUsed}, "nothing of the user is left counted")
}
