package tools_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/workerproto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pgRoles creates login roles for a test and drops them (and what they
// own in the test's database) when it ends.
func pgRoles(t *testing.T, dsn string, roles ...string) {
	t.Helper()
	super := dbtest.Postgres(t)
	for _, role := range roles {
		dbtest.ExecNoFail(super, "DROP ROLE IF EXISTS "+role)
		dbtest.Exec(t, super, "CREATE ROLE "+role+" LOGIN")
	}
	dbtest.JoinUserGroup(t, roles...)
	t.Cleanup(func() {
		for _, role := range roles {
			dbtest.ExecNoFail(dsn, "DROP OWNED BY "+role+" CASCADE")
			dbtest.ExecNoFail(super, "DROP ROLE IF EXISTS "+role)
		}
	})
}

// TestSearchPathHijackPostgres: a user who may create functions in a schema
// on another user's search_path (public here, by an operator's grant)
// defines functions that match the catalog queries' calls more exactly than
// pg_catalog's do. The victim's describe_table and set_comment, in a
// read-write and a read-only session, must not run them: every function
// and operator the tools call is schema-qualified, and the tools' own
// statements run with search_path = pg_catalog, pg_temp. The victim's own
// SQL still sees the victim's search_path.
func TestSearchPathHijackPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	pgRoles(t, cfg.DSN, "mcp_hj_eve", "mcp_hj_vic")
	dbtest.Exec(t, cfg.DSN, `GRANT CREATE ON SCHEMA public TO mcp_hj_eve;
CREATE TABLE public.vic_t (secret text); INSERT INTO public.vic_t VALUES ('the victim''s secret');
ALTER TABLE public.vic_t OWNER TO mcp_hj_vic`)
	as := cfg
	as.ConnectAsUser, as.UserRoleMemberOf = true, dbtest.UserGroup
	eve := session(t, as, "mcp_hj_eve", false)
	// Each planted function copies what the victim can read into eve's
	// table and grants eve the victim's table, when the transaction lets
	// it, and answers "hijacked" either way.
	const body = `LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    INSERT INTO public.loot SELECT secret FROM public.vic_t;
    EXECUTE 'GRANT SELECT ON public.vic_t TO mcp_hj_eve';
  EXCEPTION WHEN OTHERS THEN NULL;
  END;
  RETURN 'hijacked';
END $$`
	callOK(t, eve, "execute_sql", map[string]any{"sql": `CREATE TABLE public.loot (x text);
GRANT INSERT ON public.loot TO PUBLIC;
CREATE FUNCTION public.col_description(oid, smallint) RETURNS text ` + body + `;
CREATE FUNCTION public.obj_description(oid, text) RETURNS text ` + body + `;
CREATE FUNCTION public.lower(name) RETURNS text ` + body + `;
CREATE FUNCTION public.format_type(oid, bigint) RETURNS text ` + body})
	callOK(t, eve, "commit", nil)

	for _, readOnly := range []bool{false, true} {
		vic := session(t, as, "mcp_hj_vic", readOnly)
		_, sc := callOK(t, vic, "describe_table", map[string]any{"table": "vic_t"})
		assert.NotEqual(t, "hijacked", sc["comment"], "read-only %v", readOnly)
		for _, c := range sc["columns"].([]any) {
			assert.NotEqual(t, "hijacked", c.(map[string]any)["comment"], "read-only %v", readOnly)
		}
		callOK(t, vic, "describe_table", map[string]any{"table": "VIC_T"}) // the case-insensitive lookup
		callOK(t, vic, "get_table_ddl", map[string]any{"table": "vic_t"})
		callOK(t, vic, "list_tables", nil)
		if !readOnly {
			callOK(t, vic, "set_comment", map[string]any{"table": "vic_t", "column": "secret", "comment": "mine"})
			callOK(t, vic, "set_comment", map[string]any{"table": "vic_t", "comment": "mine too"})
		}
		// The victim's own SQL still resolves names the victim's way.
		_, sc = callOK(t, vic, "query", map[string]any{"sql": "SHOW search_path"})
		assert.Equal(t, []any{[]any{`"$user", public`}}, sc["rows"])
	}
	assert.Zero(t, dbtest.QueryInt(t, "pgx", cfg.DSN, "SELECT count(*) FROM public.loot"), "a planted function ran as the victim")
	assert.Zero(t, dbtest.QueryInt(t, "pgx", cfg.DSN, "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'mcp_hj_eve' AND table_name = 'vic_t'"))
}

// TestToolsKeepUserSearchPathPostgres: the tools' own statements change
// search_path only while they run: a user's SET search_path in
// execute_sql holds for the user's later statements, around catalog tools.
func TestToolsKeepUserSearchPathPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cs := session(t, cfg, "ada", false)
	callOK(t, cs, "execute_sql", map[string]any{"sql": "CREATE SCHEMA other; CREATE TABLE other.t (x int); SET search_path = other, public"})
	_, sc := callOK(t, cs, "describe_table", map[string]any{"table": "t"})
	assert.Equal(t, "other", sc["schema"], "the default schema is the user's")
	callOK(t, cs, "list_tables", nil)
	_, sc = callOK(t, cs, "query", map[string]any{"sql": "SELECT current_setting('search_path'), count(*) FROM t"})
	require.Len(t, sc["rows"], 1)
	assert.Equal(t, "other, public", sc["rows"].([]any)[0].([]any)[0])
}

// TestEndlessResultPostgres: a result with no end stops at the row cap and
// the counting limit; the session goes on.
func TestEndlessResultPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cfg.StatementTimeout = 5 * time.Second
	cs := session(t, cfg, "ada", true)
	_, sc := callOK(t, cs, "query", map[string]any{"sql": "SELECT generate_series(1, 1e11)", "limit": 3})
	assert.Len(t, sc["rows"], 3)
	assert.Equal(t, true, sc["totalAtLeast"], "counting stopped")
	callOK(t, cs, "status", nil)
}

// TestReadOnlyNeverDirtyPostgres: a statement that only takes a
// transaction id (pg_current_xact_id()) does not make a read-only session
// look as if it had uncommitted changes; refresh still works.
func TestReadOnlyNeverDirtyPostgres(t *testing.T) {
	cs := session(t, dbtest.Config(t, db.Postgres), "ada", true)
	callOK(t, cs, "query", map[string]any{"sql": "SELECT pg_current_xact_id()"})
	_, st := callOK(t, cs, "status", nil)
	assert.Equal(t, false, st["uncommittedChanges"])
	callOK(t, cs, "refresh", nil)
}

// TestCheckTimeoutsPostgres: a check stopped by the statement timeout is
// kind other, not sqlError; run_checks stops at its overall bound and says
// which checks it did not run.
func TestCheckTimeoutsPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cfg.StatementTimeout = 300 * time.Millisecond
	cfg.ChecksTimeout = 500 * time.Millisecond
	dbtest.Exec(t, cfg.DSN, `CREATE VIEW check_slow_a AS SELECT 1 AS x FROM pg_sleep(3600);
CREATE VIEW check_slow_b AS SELECT 1 AS x FROM pg_sleep(3600);
CREATE VIEW check_slow_c AS SELECT 1 AS x FROM pg_sleep(3600)`)
	cs := session(t, cfg, "ada", true)
	kind, msg := callErr(t, cs, "run_check", map[string]any{"check": "check_slow_a"})
	assert.Equal(t, "other", kind, msg)
	assert.Contains(t, msg, "timeout")
	_, sc := callOK(t, cs, "run_checks", nil)
	failures := sc["failures"].([]any)
	require.NotEmpty(t, failures)
	var c map[string]any
	for _, f := range failures {
		if f.(map[string]any)["check"] == "check_slow_c" {
			c = f.(map[string]any)
		}
	}
	require.NotNil(t, c, "check_slow_c is among the failures")
	assert.Contains(t, c["error"], "not run")
	callOK(t, cs, "status", nil)
}

// uncancellable takes ACCESS EXCLUSIVE on customers and catches every
// cancel.
const uncancellable = `DO $$
BEGIN
  LOCK TABLE customers IN ACCESS EXCLUSIVE MODE;
  LOOP
    BEGIN
      PERFORM pg_sleep(3600);
    EXCEPTION WHEN query_canceled THEN NULL;
    END;
  END LOOP;
END $$`

// TestUncancellableStatementPostgres: a statement that takes ACCESS
// EXCLUSIVE and ignores every cancel (it catches query_canceled) outlives
// the statement timeout and the grace after it; the session gives up on its
// connection and ends its backend, so the lock does not outlive the call
// and another session can use the table at once.
func TestUncancellableStatementPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cfg.StatementTimeout = 300 * time.Millisecond
	cs := session(t, cfg, "ada", false)
	kind, msg := callErr(t, cs, "execute_sql", map[string]any{"sql": uncancellable})
	assert.Equal(t, "other", kind, msg)
	other := session(t, cfg, "bob", false)
	callOK(t, other, "execute_sql", map[string]any{"sql": "UPDATE customers SET name = name"})
	callOK(t, other, "commit", nil)

	t.Run("the worker dies", func(t *testing.T) {
		// No one is left to end the backend: it notices its client is
		// gone (client_connection_check_interval) and ends by itself.
		cfg := cfg
		cfg.StatementTimeout = time.Hour
		cs, cmd := startWorkerCmd(t, workerproto.Identity{User: "cy", SessionID: "s-cy"}, &cfg)
		ended := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_sql", Arguments: map[string]any{"sql": uncancellable + " /* mcpgate-stuck */"}}) // the worker is killed under it
			ended <- res
		}()
		require.True(t, waitRunning(t, cfg.DSN, "mcpgate-stuck", ended), "the call ended before its statement was seen")
		require.NoError(t, cmd.Process.Kill())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // far past the 2 s check interval
		defer cancel()
		for dbtest.QueryInt(t, "pgx", cfg.DSN, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%mcpgate-stuck%' AND pid <> pg_backend_pid()") > 0 {
			select {
			case <-ctx.Done():
				t.Fatal("the backend outlived its client")
			case <-time.After(50 * time.Millisecond): // polling pg_stat_activity: nothing to await
			}
		}
		callOK(t, other, "execute_sql", map[string]any{"sql": "UPDATE customers SET name = name"})
		callOK(t, other, "commit", nil)
	})
}

// TestNonTransactionalSideEffectsPostgres: what a rollback cannot undo is
// refused in query and in read-only sessions: pg_logical_emit_message
// writes WAL (logical decoding reads it) whatever the transaction does, so
// a call of it, however spelled, is refused; with the REVOKE docs/tools.md
// gives the operator, a function that wraps it is refused by the server
// too. What the call's rollback does undo (a transaction advisory lock, a
// setting, a notification) stays allowed, and leaves nothing behind.
func TestNonTransactionalSideEffectsPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	rw, ro, other := session(t, cfg, "ada", false), session(t, cfg, "ro", true), session(t, cfg, "zed", false)
	for _, sql := range []string{
		"SELECT pg_logical_emit_message(false, 'mcpgate', 'x')",
		`SELECT "pg_logical_emit_message"(false, 'mcpgate', 'x')`,
		"SELECT pg_catalog . PG_LOGICAL_EMIT_MESSAGE(true, 'mcpgate', 'x')",
		"SELECT * FROM pg_logical_emit_message/**/(false, 'mcpgate', 'x')",
		`SELECT U&"pg_logical_emit_messag\0065"(false, 'mcpgate', 'x')`,
		`SELECT query_to_xml('SELECT pg_logical' || '_emit_message(false, ''mcpgate'', ''x'')', true, true, '')`,
	} {
		for _, cs := range []*mcp.ClientSession{rw, ro} {
			kind, msg := callErr(t, cs, "query", map[string]any{"sql": sql})
			assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
		}
	}
	callOK(t, rw, "execute_sql", map[string]any{"sql": "SELECT pg_logical_emit_message(true, 'mcpgate', 'a write of the session')"})

	callOK(t, ro, "query", map[string]any{"sql": "SELECT pg_advisory_xact_lock(43), pg_notify('c', 'x'), set_config('lock_timeout', '1', false)"})
	_, sc := callOK(t, other, "query", map[string]any{"sql": "SELECT pg_try_advisory_xact_lock(43)"})
	assert.Equal(t, []any{[]any{true}}, sc["rows"], "the transaction lock went with the call")
	_, sc = callOK(t, ro, "query", map[string]any{"sql": "SHOW lock_timeout"})
	assert.Equal(t, []any{[]any{"5s"}}, sc["rows"], "the setting went with the call")

	t.Run("revoked", func(t *testing.T) {
		pgRoles(t, cfg.DSN, "mcp_ntx_eve")
		dbtest.Exec(t, cfg.DSN, `REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text), pg_logical_emit_message(boolean, text, bytea) FROM PUBLIC;
GRANT CREATE ON SCHEMA public TO mcp_ntx_eve`)
		as := cfg
		as.ConnectAsUser, as.UserRoleMemberOf = true, dbtest.UserGroup
		eve := session(t, as, "mcp_ntx_eve", false)
		callOK(t, eve, "execute_sql", map[string]any{"sql": "CREATE FUNCTION public.emit() RETURNS pg_lsn LANGUAGE sql AS $$ SELECT pg_logical_emit_message(false, 'mcpgate', 'x') $$"})
		callOK(t, eve, "commit", nil)
		ro := session(t, as, "mcp_ntx_eve", true)
		kind, msg := callErr(t, ro, "query", map[string]any{"sql": "SELECT public.emit()"})
		assert.Equal(t, "refused", kind, msg)
		assert.Contains(t, msg, "permission denied")
	})
}

// TestUserRoleRulePostgres (hostile): a user id is something the identity
// provider may let its users choose, so with set_role and connect_as_user
// a worker uses the role it names only when that role is a plain member of
// the operator's user_role_member_of. Each other user id is refused at
// session start with an error that says why: the superuser, "none" (SET
// ROLE "none" resets to the login role), the login role itself, the group
// role, a role outside the group, and members of the group that are
// privileged themselves or through another role.
func TestUserRoleRulePostgres(t *testing.T) {
	super := dbtest.Postgres(t)
	cfg := dbtest.Config(t, db.Postgres)
	roles := []string{"mcp_ur_login", "mcp_ur_ok", "mcp_ur_files", "mcp_ur_bypass", "mcp_ur_repl", "mcp_ur_nested", "mcp_ur_admin", "mcp_ur_outsider"}
	pgRoles(t, cfg.DSN, roles...)
	dbtest.Exec(t, super, `GRANT pg_read_server_files TO mcp_ur_files;
ALTER ROLE mcp_ur_bypass BYPASSRLS; ALTER ROLE mcp_ur_repl REPLICATION;
ALTER ROLE mcp_ur_admin NOLOGIN CREATEROLE; GRANT mcp_ur_admin TO mcp_ur_nested;
REVOKE `+dbtest.UserGroup+` FROM mcp_ur_outsider, mcp_ur_login;
GRANT mcp_ur_ok TO mcp_ur_login`)
	refused := map[string]string{
		"postgres":        "the role is a superuser",
		"none":            "PostgreSQL reserves the name",
		"mcp_ur_login":    "it is the gateway's own login role",
		dbtest.UserGroup:  "it is the role every user's role is a member of",
		"mcp_ur_files":    "the role is a member of privileged roles (pg_read_server_files)",
		"mcp_ur_bypass":   "the role has BYPASSRLS",
		"mcp_ur_repl":     "the role has REPLICATION",
		"mcp_ur_nested":   "the role is a member of privileged roles (mcp_ur_admin)",
		"mcp_ur_outsider": `the role is not a member of "` + dbtest.UserGroup + `"`,
	}
	for _, mode := range []string{"set_role", "connect_as_user"} {
		t.Run(mode, func(t *testing.T) {
			as := cfg
			as.DSN += " user=mcp_ur_login"
			as.UserRoleMemberOf = dbtest.UserGroup
			as.SetRole, as.ConnectAsUser = mode == "set_role", mode == "connect_as_user"
			for user, why := range refused {
				t.Run(user, func(t *testing.T) {
					cmd := exec.Command(mcpgateBinary(t), "worker")
					cmd.Env = append(append(os.Environ(), workerproto.Identity{User: user}.Environ()...), as.Environ()...)
					out, err := cmd.CombinedOutput()
					require.Error(t, err, "the worker started as %q", user)
					assert.Contains(t, string(out), `user "`+user+`" cannot run as a database role of that name: `+why)
				})
			}
			cs := session(t, as, "mcp_ur_ok", false)
			_, sc := callOK(t, cs, "query", map[string]any{"sql": "SELECT current_user"})
			assert.Equal(t, []any{[]any{"mcp_ur_ok"}}, sc["rows"])
		})
	}
}

// TestTempFileLimitPostgres (hostile, read-only): a query whose sort spills
// to temp files is bounded by temp_file_limit. The operator's limit on the
// database holds and no user role can raise it; where the server sets none
// and the login may set it, the session sets one.
func TestTempFileLimitPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cs := session(t, cfg, "ada", true) // the superuser login: may set it
	_, sc := callOK(t, cs, "query", map[string]any{"sql": "SHOW temp_file_limit"})
	assert.Equal(t, []any{[]any{"1GB"}}, sc["rows"], "the session set a limit")

	dbtest.Exec(t, cfg.DSN, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET temp_file_limit = %L', current_database(), '1MB'); END $$")
	pgRoles(t, cfg.DSN, "mcp_tf_user")
	as := cfg
	as.ConnectAsUser, as.UserRoleMemberOf = true, dbtest.UserGroup
	ro := session(t, as, "mcp_tf_user", true)
	kind, msg := callErr(t, ro, "query", map[string]any{"sql": "SELECT set_config('temp_file_limit', '-1', false)"})
	assert.Equal(t, "refused", kind, msg)
	spill := "SELECT set_config('work_mem', '64kB', true), count(*) FROM (SELECT g FROM generate_series(1, 500000) g ORDER BY g DESC) s"
	kind, msg = callErr(t, ro, "query", map[string]any{"sql": spill})
	assert.Equal(t, "sqlError", kind, msg)
	assert.Contains(t, msg, "temp_file_limit")
	callOK(t, ro, "status", nil)
}
