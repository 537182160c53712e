package tools_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/mcpgate/mcpgate/workerproto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is an injected clock for handle expiry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// perUserWorker serves the built-in toolsets as a per-user worker
// (Options.Transactions) in process, with instance id inst, and returns a
// connected go-sdk client.
func perUserWorker(t *testing.T, cfg db.Config, inst string, readOnly bool, o tools.TransactionOptions) *mcp.ClientSession {
	t.Helper()
	return perUserWorkerAs(t, cfg, "ada", inst, readOnly, o)
}

// perUserWorkerAs is perUserWorker for user.
func perUserWorkerAs(t *testing.T, cfg db.Config, user, inst string, readOnly bool, o tools.TransactionOptions) *mcp.ClientSession {
	t.Helper()
	eng := map[string]db.Engine{db.SQLite: sqlite.Engine{}, db.Postgres: postgres.Engine{}}[cfg.Driver]
	o.Instance = inst
	if o.Open == nil {
		o.Open = func(ctx context.Context) (*db.Session, error) { return db.Open(ctx, eng, cfg, user, readOnly) }
	}
	txs, err := tools.NewTransactions(t.Context(), o)
	require.NoError(t, err)
	t.Cleanup(func() { txs.Close() })
	srv, err := tools.NewServer(tools.Options{User: user, SessionID: inst, ReadOnly: readOnly, Transactions: txs})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func begin(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	_, sc := callOK(t, cs, "begin", nil)
	h, _ := sc["transaction"].(string)
	require.NotEmpty(t, h)
	return h
}

// in adds the transaction argument h to args.
func in(h string, args map[string]any) map[string]any {
	out := map[string]any{"transaction": h}
	for k, v := range args {
		out[k] = v
	}
	return out
}

const customers = "SELECT count(*) FROM customers"

func insert(id int) map[string]any {
	return map[string]any{"sql": fmt.Sprintf("INSERT INTO customers (id, name, email) VALUES (%d, 'h%d', 'h%d@example.org')", id, id, id)}
}

// countIn counts customers in transaction h ("" for a call of its own).
func countIn(t *testing.T, cs *mcp.ClientSession, h string) float64 {
	t.Helper()
	args := map[string]any{"sql": customers}
	if h != "" {
		args = in(h, args)
	}
	_, sc := callOK(t, cs, "query", args)
	return sc["rows"].([]any)[0].([]any)[0].(float64)
}

// TestHandleTransactions: a handle's writes stay in its transaction until
// commit; a call without a handle never sees them; a second handle keeps
// its snapshot until refresh; commit ends the handle.
func TestHandleTransactions(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := perUserWorker(t, dbtest.Config(t, engine), "u-0123", false, tools.TransactionOptions{})
			base := countIn(t, cs, "")
			h1, h2 := begin(t, cs), begin(t, cs)
			require.NotEqual(t, h1, h2)
			assert.True(t, strings.HasPrefix(h1, "txn.u-0123."), "the handle embeds the worker instance: %s", h1)
			assert.Equal(t, base, countIn(t, cs, h2), "h2's snapshot is taken")

			text, _ := callOK(t, cs, "execute_sql", in(h1, insert(901)))
			assert.Contains(t, text, "uncommitted in the transaction")
			assert.Equal(t, base+1, countIn(t, cs, h1), "h1 sees its own write")
			assert.Equal(t, base, countIn(t, cs, ""), "a call without a handle never sees uncommitted writes")
			assert.Equal(t, base, countIn(t, cs, h2), "another handle never sees uncommitted writes")

			_, sc := callOK(t, cs, "status", map[string]any{"transaction": h1})
			assert.Equal(t, true, sc["uncommittedChanges"])
			assert.Equal(t, h1, sc["transaction"])

			callOK(t, cs, "commit", map[string]any{"transaction": h1})
			assert.Equal(t, base+1, countIn(t, cs, ""), "a call without a handle sees the commit")
			assert.Equal(t, base, countIn(t, cs, h2), "h2 keeps its snapshot until refresh")
			callOK(t, cs, "refresh", map[string]any{"transaction": h2})
			assert.Equal(t, base+1, countIn(t, cs, h2))

			kind, msg := callErr(t, cs, "query", in(h1, map[string]any{"sql": customers}))
			assert.Equal(t, "handleUnknown", kind)
			assert.Contains(t, msg, "already ended")
			assert.Contains(t, msg, "call begin")

			callOK(t, cs, "execute_sql", in(h2, insert(902)))
			callOK(t, cs, "abort", map[string]any{"transaction": h2})
			assert.Equal(t, base+1, countIn(t, cs, ""), "abort discarded h2's write")
			kind, _ = callErr(t, cs, "commit", map[string]any{"transaction": h2})
			assert.Equal(t, "handleUnknown", kind)
		})
	}
}

// TestCallWithoutHandle: a write without a handle commits when the call
// succeeds and is undone whole when it fails; commit, abort and refresh
// need a handle.
func TestCallWithoutHandle(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := perUserWorker(t, dbtest.Config(t, engine), "u-0123", false, tools.TransactionOptions{})
			base := countIn(t, cs, "")
			text, sc := callOK(t, cs, "execute_sql", insert(911))
			assert.Contains(t, text, "committed")
			assert.Equal(t, true, sc["committed"])
			h := begin(t, cs)
			assert.Equal(t, base+1, countIn(t, cs, h), "a new transaction sees the autocommitted write")

			kind, _ := callErr(t, cs, "execute_sql", map[string]any{"sql": insert(912)["sql"].(string) + "; INSERT INTO customers (id) VALUES (913)"})
			assert.NotEmpty(t, kind)
			assert.Equal(t, base+1, countIn(t, cs, ""), "a failed call without a handle leaves nothing")

			for _, name := range []string{"commit", "abort", "refresh"} {
				kind, msg := callErr(t, cs, name, nil)
				assert.Equal(t, "invalidParams", kind, name)
				assert.Contains(t, msg, "transaction", name)
			}
			_, sc = callOK(t, cs, "status", nil)
			assert.Equal(t, "u-0123", sc["sessionId"])
			assert.NotContains(t, sc, "uncommittedChanges")
		})
	}
}

// TestHandleOfAnotherReplica: a handle minted on another gateway replica
// (the replica id starts the worker instance id) is told apart from one of
// another worker on this replica: the error names both replicas and the
// Mcp-Param-Transaction header a load balancer routes on. Before the
// replica check it got the generic "another worker" message.
func TestHandleOfAnotherReplica(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	r1 := perUserWorker(t, cfg, "r1_u-aaaa", false, tools.TransactionOptions{})
	r2 := perUserWorker(t, cfg, "r2_u-aaaa", false, tools.TransactionOptions{})
	h := begin(t, r1)
	require.True(t, strings.HasPrefix(h, "txn.r1_u-aaaa."), "the handle carries the replica: %s", h)
	base := countIn(t, r2, "")

	tests := []struct{ name, handle, says string }{
		{"minted on r1", h, `replica "r1" and this is replica "r2"`},
		{"forged for r3", "txn.r3_u-aaaa.AAAAAAAAAAAAAAAAAAAAAA", `replica "r3"`},
		{"of no replica", "txn.u-aaaa.AAAAAAAAAAAAAAAAAAAAAA", `replica ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, msg := callErr(t, r2, "execute_sql", in(tt.handle, insert(931)))
			assert.Equal(t, "handleForeign", kind)
			assert.Contains(t, msg, tt.says)
			assert.Contains(t, msg, "Mcp-Param-Transaction")
			assert.Equal(t, base, countIn(t, r2, ""), "nothing ran")
		})
	}
	// r1's own worker still runs it.
	callOK(t, r1, "execute_sql", in(h, insert(932)))
}

// TestHandleKinds: every handle that names no open transaction of this
// worker gets its own kind, and nothing runs.
func TestHandleKinds(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			clk := &clock{now: time.Unix(1e9, 0)}
			cs := perUserWorker(t, cfg, "u-aaaa", false, tools.TransactionOptions{IdleTimeout: time.Minute, Now: clk.Now})
			other := perUserWorker(t, cfg, "u-bbbb", false, tools.TransactionOptions{})
			ro := perUserWorker(t, cfg, "u-cccc", true, tools.TransactionOptions{})
			mine := begin(t, cs)
			base := countIn(t, cs, "")

			tests := []struct {
				name, handle, kind, says string
			}{
				{"malformed", "not-a-handle", "handleUnknown", "is not a transaction handle"},
				{"forged for this worker", "txn.u-aaaa.AAAAAAAAAAAAAAAAAAAAAA", "handleUnknown", "never minted here"},
				{"forged for no worker", "txn.u-ffff.AAAAAAAAAAAAAAAAAAAAAA", "handleForeign", "another worker"},
				{"another worker's", begin(t, other), "handleForeign", "another worker"},
				{"the read-only worker's", begin(t, ro), "handleForeign", "another worker"},
				{"header injection", "txn.u-aaaa.x\r\nX-Evil: 1", "handleUnknown", "not a transaction handle"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					kind, msg := callErr(t, cs, "execute_sql", in(tt.handle, insert(921)))
					assert.Equal(t, tt.kind, kind)
					assert.Contains(t, msg, tt.says)
					assert.Contains(t, msg, "call begin")
					assert.Equal(t, base, countIn(t, cs, ""), "nothing ran")
				})
			}
			// mine is still fine; expired when idle past the timeout.
			countIn(t, cs, mine)
			clk.advance(59 * time.Second)
			countIn(t, cs, mine)
			clk.advance(time.Minute)
			kind, msg := callErr(t, cs, "query", in(mine, map[string]any{"sql": customers}))
			assert.Equal(t, "handleExpired", kind)
			assert.Contains(t, msg, "1m0s")
		})
	}
}

// TestHandleExpiryRollsBack: an expired handle's uncommitted write is
// rolled back, and the expiry frees its place under the bound.
func TestHandleExpiryRollsBack(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			clk := &clock{now: time.Unix(1e9, 0)}
			cs := perUserWorker(t, dbtest.Config(t, engine), "u-0123", false, tools.TransactionOptions{Max: 1, IdleTimeout: time.Minute, Now: clk.Now})
			base := countIn(t, cs, "")
			h := begin(t, cs)
			callOK(t, cs, "execute_sql", in(h, insert(931)))
			kind, msg := callErr(t, cs, "begin", nil)
			assert.Equal(t, "handleLimit", kind)
			assert.Contains(t, msg, "1 open transactions")
			clk.advance(2 * time.Minute)
			h2 := begin(t, cs) // the sweep made room
			assert.Equal(t, base, countIn(t, cs, h2), "the expired write was rolled back")
			kind, _ = callErr(t, cs, "commit", map[string]any{"transaction": h})
			assert.Equal(t, "handleExpired", kind)
		})
	}
}

// TestHandleLimit: the bound is per worker and freed by commit and abort.
func TestHandleLimit(t *testing.T) {
	cs := perUserWorker(t, dbtest.Config(t, db.SQLite), "u-0123", false, tools.TransactionOptions{Max: 2})
	h1, h2 := begin(t, cs), begin(t, cs)
	kind, msg := callErr(t, cs, "begin", nil)
	assert.Equal(t, "handleLimit", kind)
	assert.Contains(t, msg, "commit or abort one")
	callOK(t, cs, "abort", map[string]any{"transaction": h1})
	h3 := begin(t, cs)
	callOK(t, cs, "commit", map[string]any{"transaction": h2})
	callOK(t, cs, "abort", map[string]any{"transaction": h3})
	begin(t, cs)
	callOK(t, cs, "query", map[string]any{"sql": customers}) // handle-less calls are not bounded by handles
}

// TestHandlesConcurrent: many handles in one worker, used at once, each
// sees its own write and commits it (PostgreSQL: concurrent writers;
// SQLite allows one writer at a time, so there the handles only read).
func TestHandlesConcurrent(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			const n = 8
			cs := perUserWorker(t, dbtest.Config(t, engine), "u-0123", false, tools.TransactionOptions{Max: n})
			base := countIn(t, cs, "")
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- concurrentHandle(t.Context(), cs, engine, 940+i)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				assert.NoError(t, err)
			}
			want := base
			if engine == db.Postgres {
				want += n
			}
			assert.Equal(t, want, countIn(t, cs, ""))
		})
	}
}

// concurrentHandle begins, writes customer id (PostgreSQL), checks that it
// sees its row, and commits.
func concurrentHandle(ctx context.Context, cs *mcp.ClientSession, engine string, id int) error {
	call := func(name string, args map[string]any) (map[string]any, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, fmt.Errorf("%s: %v", name, res.StructuredContent)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		return sc, nil
	}
	sc, err := call("begin", nil)
	if err != nil {
		return err
	}
	h := sc["transaction"].(string)
	want := 0.0
	if engine == db.Postgres {
		if _, err := call("execute_sql", in(h, insert(id))); err != nil {
			return err
		}
		want = 1
	}
	sc, err = call("query", in(h, map[string]any{"sql": fmt.Sprintf("SELECT count(*) FROM customers WHERE id = %d", id)}))
	if err != nil {
		return err
	}
	if got := sc["rows"].([]any)[0].([]any)[0].(float64); got != want {
		return fmt.Errorf("handle %d sees %v of its rows, want %v", id, got, want)
	}
	_, err = call("commit", map[string]any{"transaction": h})
	return err
}

// TestReadOnlyPerUserWorker: a read-only worker cannot write, with a
// handle or without one.
func TestReadOnlyPerUserWorker(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := perUserWorker(t, dbtest.Config(t, engine), "u-0123", true, tools.TransactionOptions{})
			names := toolNames(t, cs)
			assert.Contains(t, names, "begin")
			assert.Contains(t, names, "abort")
			assert.NotContains(t, names, "execute_sql")
			assert.NotContains(t, names, "commit")
			base := countIn(t, cs, "")
			h := begin(t, cs)
			write := map[string]any{"sql": "WITH d AS (DELETE FROM customers RETURNING id) SELECT count(*) FROM d"}
			for _, args := range []map[string]any{write, in(h, write)} {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "query", Arguments: args})
				require.NoError(t, err)
				assert.True(t, res.IsError, "a read-only worker ran a write: %s", resultText(res))
				res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute_sql", Arguments: in(h, insert(951))})
				if err == nil {
					assert.True(t, res.IsError)
				}
			}
			assert.Equal(t, base, countIn(t, cs, h))
			assert.Equal(t, base, countIn(t, cs, ""))
			callOK(t, cs, "abort", map[string]any{"transaction": h})
		})
	}
}

// TestPerUserToolList: a per-user worker's database tools take the
// transaction argument, mirrored into Mcp-Param-Transaction (SEP-2243);
// commit, abort and refresh require it; begin takes none.
func TestPerUserToolList(t *testing.T) {
	cs := perUserWorker(t, dbtest.Config(t, db.SQLite), "u-0123", false, tools.TransactionOptions{})
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		schema := tool.InputSchema.(map[string]any)
		props := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		p, ok := props["transaction"].(map[string]any)
		switch tool.Name {
		case "begin":
			assert.False(t, ok, "begin takes no transaction")
			continue
		case "commit", "abort", "refresh":
			assert.Contains(t, req, "transaction", tool.Name)
		default:
			assert.NotContains(t, req, "transaction", tool.Name)
		}
		require.True(t, ok, "%s has no transaction argument", tool.Name)
		assert.Equal(t, "Transaction", p["x-mcp-header"], tool.Name)
		assert.Equal(t, "string", p["type"], tool.Name)
	}
}

// TestPerUserWorkerProcess: `mcpgate worker` with MCPGATE_WORKER_SCOPE=user
// is a per-user worker whose handles embed MCPGATE_WORKER_SESSION_ID and
// obey MCPGATE_WORKER_DB_MAX_TRANSACTIONS; without the scope it is a
// session worker with no begin.
func TestPerUserWorkerProcess(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	cfg.MaxTransactions = 1
	id := workerproto.Identity{User: "ada", SessionID: "u-5eed"}
	cmd := exec.Command(mcpgateBinary(t), "worker")
	cmd.Env = append(append(append(os.Environ(), id.Environ()...), cfg.Environ()...), "MCPGATE_WORKER_SCOPE=user")
	cmd.Stderr = &testWriter{t: t}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	h := begin(t, cs)
	assert.True(t, strings.HasPrefix(h, "txn.u-5eed."), h)
	kind, _ := callErr(t, cs, "begin", nil)
	assert.Equal(t, "handleLimit", kind)
	callOK(t, cs, "execute_sql", in(h, insert(961)))
	callOK(t, cs, "commit", map[string]any{"transaction": h})

	legacy := startWorker(t, id, &cfg)
	assert.NotContains(t, toolNames(t, legacy), "begin")
	kind, _ = callErr(t, legacy, "query", map[string]any{"sql": customers, "transaction": h})
	assert.Equal(t, "invalidParams", kind, "a session worker takes no transaction argument")
	assert.Equal(t, float64(4), count(t, legacy, customers))
}

// TestPooledConnectionRoleSwitch (hostile, PostgreSQL with set_role): a
// call that leaves its connection switched to another user's role is
// refused and that connection is closed, never pooled: the next call
// without a handle runs as the user again, and a handle whose connection
// was closed ends (handleUnknown) instead of failing as "closed" forever.
func TestPooledConnectionRoleSwitch(t *testing.T) {
	super := dbtest.Postgres(t)
	dsn := dbtest.PostgresDB(t, `
CREATE TABLE notes (id serial PRIMARY KEY, owner text NOT NULL DEFAULT current_user, body text NOT NULL);
ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON notes USING (owner = current_user) WITH CHECK (owner = current_user);
INSERT INTO notes (owner, body) VALUES ('mcp_hcarol', 'c1'), ('mcp_hdave', 'd1'), ('mcp_hdave', 'd2');`)
	for _, role := range []string{"mcp_hcarol", "mcp_hdave"} {
		dbtest.ExecNoFail(super, "CREATE ROLE "+role)
		dbtest.Exec(t, dsn, "GRANT SELECT, INSERT ON notes TO "+role)
	}
	dbtest.JoinUserGroup(t, "mcp_hcarol", "mcp_hdave")
	t.Cleanup(func() {
		for _, role := range []string{"mcp_hcarol", "mcp_hdave"} {
			dbtest.ExecNoFail(dsn, "DROP OWNED BY "+role)
			dbtest.ExecNoFail(super, "DROP ROLE IF EXISTS "+role)
		}
	})
	cfg := db.Config{Driver: db.Postgres, DSN: dsn, SetRole: true, UserRoleMemberOf: dbtest.UserGroup}
	cs := perUserWorkerAs(t, cfg, "mcp_hcarol", "u-c4201", false, tools.TransactionOptions{})
	const who = "SELECT current_user, (SELECT count(*) FROM notes)"
	row := func(args map[string]any) []any {
		_, sc := callOK(t, cs, "query", args)
		return sc["rows"].([]any)[0].([]any)
	}
	assert.Equal(t, []any{"mcp_hcarol", float64(1)}, row(map[string]any{"sql": who}))
	h := begin(t, cs)
	switchRole := "SELECT set_config('role', 'mcp_hdave', false), (SELECT count(*) FROM notes)"
	for _, args := range []map[string]any{{"sql": switchRole}, in(h, map[string]any{"sql": switchRole})} {
		kind, msg := callErr(t, cs, "query", args)
		assert.Equal(t, "refused", kind, msg)
		for range 6 { // more calls than the idle pool holds
			assert.Equal(t, []any{"mcp_hcarol", float64(1)}, row(map[string]any{"sql": who}), "a pooled connection kept another user's role")
		}
	}
	kind, msg := callErr(t, cs, "query", in(h, map[string]any{"sql": who}))
	assert.Equal(t, "handleUnknown", kind)
	assert.Contains(t, msg, "connection closed")
}

// TestExpiredHandleReleasesLocks: a handle abandoned while holding a row
// lock does not block other calls past its idle timeout: a call without a
// handle sweeps expired handles before it takes a connection.
func TestExpiredHandleReleasesLocks(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cfg.LockTimeout = 500 * time.Millisecond // a leftover lock fails the test fast
			clk := &clock{now: time.Unix(1e9, 0)}
			cs := perUserWorker(t, cfg, "u-0123", false, tools.TransactionOptions{IdleTimeout: time.Minute, Now: clk.Now})
			h := begin(t, cs)
			callOK(t, cs, "execute_sql", in(h, map[string]any{"sql": "UPDATE customers SET name = 'held' WHERE id = 1"}))
			clk.advance(2 * time.Minute) // the client walked away
			callOK(t, cs, "execute_sql", map[string]any{"sql": "UPDATE customers SET name = 'free' WHERE id = 1"})
			kind, _ := callErr(t, cs, "status", map[string]any{"transaction": h})
			assert.Equal(t, "handleExpired", kind)
		})
	}
}

// TestHandleStateDoesNotLeak (hostile): what a committed transaction left
// on its connection (a TEMP table; on PostgreSQL also a WITH HOLD cursor,
// search_path and statement_timeout = 0) is gone in the user's next calls,
// with a handle or without one: a connection that committed is closed, not
// pooled.
func TestHandleStateDoesNotLeak(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cs := perUserWorker(t, cfg, "u-c4202", false, tools.TransactionOptions{})
			plant := []string{"CREATE TEMP TABLE leak (x int)"}
			if engine == db.Postgres {
				plant = append(plant, "DECLARE leaky CURSOR WITH HOLD FOR SELECT 1", "SET search_path = pg_catalog", "SET statement_timeout = 0")
			}
			check := func(t *testing.T) {
				for range 6 { // more calls than the idle pool holds
					kind, msg := callErr(t, cs, "query", map[string]any{"sql": "SELECT count(*) FROM leak"})
					assert.Contains(t, []string{"notFound", "sqlError"}, kind, msg)
					assert.Regexp(t, `no such table|does not exist`, msg)
					if engine == db.Postgres {
						_, sc := callOK(t, cs, "query", map[string]any{"sql": "SELECT current_setting('search_path'), current_setting('statement_timeout'), (SELECT count(*) FROM pg_cursors WHERE name = 'leaky')"})
						assert.Equal(t, []any{[]any{`"$user", public`, "30s", float64(0)}}, sc["rows"])
					}
				}
			}
			t.Run("handle", func(t *testing.T) {
				h := begin(t, cs)
				for _, p := range plant {
					callOK(t, cs, "execute_sql", in(h, map[string]any{"sql": p}))
				}
				callOK(t, cs, "commit", in(h, nil))
				check(t)
			})
			t.Run("no handle", func(t *testing.T) {
				callOK(t, cs, "execute_sql", map[string]any{"sql": strings.Join(plant, "; ")})
				check(t)
			})
		})
	}
}

// TestHandleRollbackStateDoesNotLeak (hostile): what a statement leaves on
// its connection that no rollback undoes (on PostgreSQL a prepared
// statement, on SQLite case_sensitive_like) is gone in the user's next
// calls after an abort, or after a handle-less call that failed: a
// connection not as Open left it is closed, not pooled.
func TestHandleRollbackStateDoesNotLeak(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cs := perUserWorker(t, cfg, "u-c4203", false, tools.TransactionOptions{})
			plant, probe, clean := "PRAGMA case_sensitive_like = 1", "SELECT 'a' LIKE 'A'", []any{[]any{float64(1)}}
			if engine == db.Postgres {
				plant, probe, clean = "PREPARE leaky AS SELECT 1", "SELECT count(*) FROM pg_prepared_statements WHERE name = 'leaky'", []any{[]any{float64(0)}}
			}
			check := func(t *testing.T) {
				for range 6 { // more calls than the idle pool holds
					_, sc := callOK(t, cs, "query", map[string]any{"sql": probe})
					assert.Equal(t, clean, sc["rows"])
				}
			}
			t.Run("abort", func(t *testing.T) {
				h := begin(t, cs)
				callOK(t, cs, "execute_sql", in(h, map[string]any{"sql": plant}))
				callOK(t, cs, "abort", in(h, nil))
				check(t)
			})
			t.Run("failed call", func(t *testing.T) {
				callErr(t, cs, "execute_sql", map[string]any{"sql": plant + "; SELECT * FROM no_such_table"})
				check(t)
			})
		})
	}
}
