package tools_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
)

// TestPerUserWorkerConnectionCap: however many calls without a handle a
// user sends at once, a per-user worker holds at most max_transactions+1
// database sessions, the figure the gateway's connection budget counts for
// it; the calls beyond wait for a session to come back, and all succeed.
func TestPerUserWorkerConnectionCap(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	var opened atomic.Int32
	cs := perUserWorker(t, cfg, "u-cap", false, tools.TransactionOptions{
		Max: 1,
		Open: func(ctx context.Context) (*db.Session, error) {
			opened.Add(1)
			return db.Open(ctx, postgres.Engine{}, cfg, "ada", false)
		},
	})

	h := begin(t, cs) // one handle: one session
	callOK(t, cs, "query", in(h, map[string]any{"sql": "SELECT 1"}))
	const n = 12
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"sql": "SELECT pg_sleep(0.05)"}})
			if assert.NoError(t, err) {
				assert.False(t, res.IsError, resultText(res))
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, opened.Load(), int32(db.ConnectionsPerUserWorker(db.Config{MaxTransactions: 1})), "sessions opened")
	callOK(t, cs, "commit", in(h, nil))
}
