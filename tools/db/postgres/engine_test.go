package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, cfg db.Config, user string, readOnly bool) *db.Session {
	t.Helper()
	s, err := db.Open(t.Context(), postgres.Engine{}, cfg, user, readOnly)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func kind(t *testing.T, err error) string {
	t.Helper()
	var de *db.Error
	require.True(t, errors.As(err, &de), "got %T %v, want *db.Error", err, err)
	return de.Kind
}

// TestReadOnlyByTheDatabase bypasses the tools' statement checks: the
// server refuses every write of a read-only session, even after the
// session tries to switch its defaults back to read-write.
func TestReadOnlyByTheDatabase(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	s := open(t, cfg, "ada", true)
	writes := []string{
		"INSERT INTO customers (id, name, email) VALUES (9, 'x', 'x@example.org')",
		"WITH d AS (DELETE FROM customers RETURNING id) SELECT count(*) FROM d",
		"CREATE TABLE t (x int)",
		"CREATE TEMP TABLE t (x int)",
	}
	for _, w := range writes {
		assert.Equal(t, db.KindReadOnly, kind(t, dbtest.Run(t.Context(), s, w)), w)
	}
	assert.Error(t, dbtest.Run(t.Context(), s, "SET TRANSACTION READ WRITE"))
	require.NoError(t, dbtest.Run(t.Context(), s, "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"))
	require.NoError(t, s.Commit(t.Context()))
	assert.Equal(t, db.KindReadOnly, kind(t, dbtest.Run(t.Context(), s, writes[0])), "the next transaction is still read-only")
}

func TestRoleMustExist(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cfg.SetRole, cfg.UserRoleMemberOf = true, dbtest.UserGroup
	_, err := db.Open(t.Context(), postgres.Engine{}, cfg, `no "such" role`, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cannot run as a database role`)
}

func TestBadDSN(t *testing.T) {
	_, err := db.Open(t.Context(), postgres.Engine{}, db.Config{Driver: db.Postgres, DSN: "host=/nonexistent/dir port=1 user=x password=hunter2 connect_timeout=2"}, "ada", false)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2", "the password never reaches an error")
}

func TestLiteral(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "NULL"},
		{int64(-3), "-3"},
		{1.5, "1.5"},
		{true, "TRUE"},
		{"it's", "E'it''s'"},
		{`\'; DROP TABLE t; --`, `E'\\''; DROP TABLE t; --'`},
		{[]byte{0xde, 0xad}, "pg_catalog.decode('dead', 'hex')"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, postgres.Engine{}.Literal(tt.v))
	}
}

// TestConnectionLost: a session whose server connection is killed says so,
// and keeps saying so, instead of failing in odd ways.
func TestConnectionLost(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	s := open(t, cfg, "ada", false)
	var pid int64
	require.NoError(t, s.Do(t.Context(), func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	}))
	dbtest.Exec(t, dbtest.Postgres(t), "SELECT pg_terminate_backend($1)", pid)
	err := dbtest.Run(t.Context(), s, "SELECT 1")
	require.Error(t, err)
	err = dbtest.Run(t.Context(), s, "SELECT 1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start a new MCP session")
}

// TestOneCommandPerStatement: a tool's statement goes over the extended
// protocol, so a string that holds several commands (one that Split would
// have cut wrongly) is refused by the server rather than run, while the
// affected-row count still comes back.
func TestOneCommandPerStatement(t *testing.T) {
	s := open(t, dbtest.Config(t, db.Postgres), "ada", false)
	err := dbtest.Run(t.Context(), s, "CREATE TABLE a (x int); COMMIT; CREATE TABLE b (x int)")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "multiple commands")
	require.NoError(t, s.Abort(t.Context()))
	var n int64
	require.NoError(t, s.Do(t.Context(), func(ctx context.Context, q db.Querier) error {
		if err := q.QueryRowContext(ctx, "SELECT count(*) FROM pg_class WHERE relname IN ('a', 'b')").Scan(&n); err != nil {
			return err
		}
		assert.Zero(t, n, "nothing was created or committed")
		res, err := q.ExecContext(ctx, "UPDATE customers SET name = name")
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	}))
	assert.Equal(t, int64(3), n)
}

func TestSideEffect(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT pg_logical_emit_message(false, 'a', 'b')":                   "pg_logical_emit_message",
		`SELECT "PG_LOGICAL_EMIT_MESSAGE" /* a /* nested */ one */ (x)`:     "pg_logical_emit_message",
		"SELECT pg_catalog.dblink_exec -- c\n ('x')":                        "dblink_exec",
		`SELECT U&"d\0062link"('x')`:                                        `a U&"…" identifier`,
		"SELECT * FROM dblink_targets":                                      "",
		"SELECT 1 FROM pg_stat_reset_x WHERE a = 'pg_logical_emit_message'": "",
		"SELECT pg_notify('c', 'x'), pg_advisory_xact_lock(1)":              "",
		"SELECT query_to_xml('SELECT 1', true, true, '')":                   "query_to_xml",
	} {
		assert.Equal(t, want, postgres.SideEffect(q), q)
	}
}

// TestHugeCommentBounded (hostile): a table's owner makes its comments as
// large as the server allows; describe_table reads them cut in the server.
func TestHugeCommentBounded(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	dbtest.Exec(t, cfg.DSN, "DO $$ BEGIN EXECUTE format('COMMENT ON TABLE customers IS %L', repeat('c', 3000000)); EXECUTE format('COMMENT ON COLUMN customers.name IS %L', repeat('n', 3000000)); END $$")
	s := open(t, cfg, "ada", true)
	var tb *db.Table
	require.NoError(t, s.Do(t.Context(), func(ctx context.Context, q db.Querier) (err error) {
		tb, err = postgres.Engine{}.Table(ctx, q, "", "customers")
		return err
	}))
	note := fmt.Sprintf("… [cut at %d of 3000000 characters]", db.MaxSourceChars)
	assert.Equal(t, strings.Repeat("c", db.MaxSourceChars)+note, tb.Comment)
	for _, c := range tb.Columns {
		assert.LessOrEqual(t, len(c.Comment), db.MaxSourceChars+len(note))
	}
}

// TestHugeDefinitionsBounded (hostile): a table's owner plants a column
// default, a check constraint and a trigger's WHEN clause of megabytes
// each (built in the server with format, so the
// statement itself is short); describe_table and get_table_ddl read each cut
// in the server at db.MaxSourceChars, never whole: every column's default
// read whole would add up past the worker's memory long before one row
// reaches the row bound.
func TestHugeDefinitionsBounded(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	const big = 3000000
	dbtest.Exec(t, cfg.DSN, fmt.Sprintf(`DO $$ BEGIN
EXECUTE format('ALTER TABLE customers ALTER COLUMN name SET DEFAULT %%L', repeat('d', %[1]d));
EXECUTE format('ALTER TABLE customers ADD CONSTRAINT big_check CHECK (name <> %%L)', repeat('k', %[1]d));
EXECUTE format('CREATE TRIGGER big_trig BEFORE UPDATE ON customers FOR EACH ROW WHEN (NEW.name <> %%L) EXECUTE FUNCTION suppress_redundant_updates_trigger()', repeat('t', %[1]d));
END $$`, big))
	s := open(t, cfg, "ada", true)
	var tb *db.Table
	var ddl string
	require.NoError(t, s.Do(t.Context(), func(ctx context.Context, q db.Querier) (err error) {
		if tb, err = (postgres.Engine{}).Table(ctx, q, "", "customers"); err != nil {
			return err
		}
		ddl, err = postgres.Engine{}.TableDDL(ctx, q, "", "customers")
		return err
	}))
	for _, c := range tb.Columns {
		if c.Default != nil {
			assert.Less(t, len(*c.Default), db.MaxSourceChars+100, c.Name)
		}
	}
	assert.Less(t, len(ddl), 4*(db.MaxSourceChars+100), "the DDL holds each definition cut")
	assert.Contains(t, ddl, "[cut at")
}
