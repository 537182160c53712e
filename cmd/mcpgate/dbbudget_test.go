package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
)

// backendsOf counts the client backends connected to dsn's database in a
// state ("" for any), seen from the superuser's connection.
func backendsOf(t *testing.T, super, dsn, state string) int64 {
	t.Helper()
	name := dsn[strings.LastIndex(dsn, "dbname=")+len("dbname="):]
	if i := strings.LastIndexByte(dsn, '/'); strings.Contains(dsn, "://") && i >= 0 {
		name = strings.SplitN(dsn[i+1:], "?", 2)[0]
	}
	return dbtest.QueryInt(t, "pgx", super, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = $1 AND backend_type = 'client backend' AND ($2 = '' OR state = $2)`, name, state)
}

// TestServeDBConnectionBudget runs the real program on PostgreSQL with a
// budget of 2 connections per principal: a user over it gets 429 for a
// new session and for a 2026-07-28 call that needs a worker, while another
// user still works; a session holds no transaction until its first
// statement, and an idle one gives its transaction and then its
// connection back (pg_stat_activity). Sessions in processes of their own
// (worker.sessions per_session): a session hosted in its user's worker is
// charged as gateway/hosted.go says, tested in the gateway package.
func TestServeDBConnectionBudget(t *testing.T) {
	super := dbtest.Postgres(t)
	dsn := dbtest.PostgresDB(t, db.DemoSchema)
	g := startTLSGateway(t, map[string]string{
		"MCPGATE_DATABASE_DRIVER":                    "postgres",
		"MCPGATE_DATABASE_DSN":                       dsn,
		"MCPGATE_DATABASE_MAX_TRANSACTIONS":          "1",
		"MCPGATE_LIMITS_MAX_DB_CONNECTIONS_PER_USER": "2",
		"MCPGATE_DATABASE_IDLE_RELEASE":              "300ms",
		"MCPGATE_WORKER_SESSIONS":                    "per_session",
	})
	alice := g.token(t, "alice", "mcp:use", "mcp:write")
	a1 := g.connectSession(t, &alice)
	st := statusOf(t, a1)
	assert.Equal(t, false, st["transactionOpen"])
	a2 := g.connectSession(t, &alice)
	statusOf(t, a2)
	assert.Zero(t, backendsOf(t, super, dsn, "idle in transaction"), "no session holds a transaction before its first statement")

	code, h, body := g.raw(t, alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	assert.Equal(t, http.StatusTooManyRequests, code, body)
	assert.NotEmpty(t, h.Get("Retry-After"))
	assert.Contains(t, body, "limits.max_db_connections_per_user")
	code, _, body = g.rawModern(t, alice, "status", `{}`)
	assert.Equal(t, http.StatusTooManyRequests, code, "a per-user worker holds 2 (max_transactions 1 + 1): %s", body)

	bob := g.token(t, "bob", "mcp:use", "mcp:write")
	b1 := g.connectSession(t, &bob)
	res, err := b1.CallTool(context.Background(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"sql": "SELECT count(*) FROM customers"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "bob's query: %v", res.Content)
	assert.Equal(t, true, statusOf(t, b1)["transactionOpen"], "the first statement began bob's transaction")

	// A write stays uncommitted in its transaction however long it idles.
	res, err = a1.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_sql", Arguments: map[string]any{"sql": "UPDATE customers SET name = name WHERE id = 1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "alice's write: %v", res.Content)

	// After the idle release every session but the one with a write has
	// given its connection back. Polled: the release runs on the worker's
	// own clock, and the server shows its outcome only.
	deadline := time.Now().Add(60 * time.Second)
	for backendsOf(t, super, dsn, "") > 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	assert.EqualValues(t, 1, backendsOf(t, super, dsn, ""), "idle sessions hold no connection")
	assert.EqualValues(t, 1, backendsOf(t, super, dsn, "idle in transaction"), "the uncommitted write keeps its transaction")
	st = statusOf(t, a1)
	assert.Equal(t, true, st["uncommittedChanges"])
	assert.Equal(t, false, statusOf(t, b1)["transactionOpen"], "bob's read snapshot ended when idle")

	res, err = b1.CallTool(context.Background(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"sql": "SELECT count(*) FROM customers"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, "the next statement connects again: %v", res.Content)
}
