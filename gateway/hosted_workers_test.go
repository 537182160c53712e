package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
)

// TestSharedSessionsAreNoWorkers: Workers counts processes (the
// mcpgate_workers gauge): sessions hosted in their user's worker are
// sessions, not session workers; the one process they share is a
// per-user worker.
func TestSharedSessionsAreNoWorkers(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{})
	rawSessionWith(t, url, "X-Test-User", "alice")
	rawSessionWith(t, url, "X-Test-User", "alice")
	assert.Equal(t, 2, g.Sessions())
	assert.Equal(t, 0, g.Workers(WorkerSession), "no session has a process of its own")
	assert.Equal(t, 1, g.Workers(WorkerUser), "one process hosts both")
}
