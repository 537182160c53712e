// Package dbtest gives tests a fresh database with the demo schema on each
// engine: a SQLite file in a temporary directory, and a throwaway
// PostgreSQL database on the server named by MCPGATE_TEST_POSTGRES_DSN (a
// superuser DSN; scripts/with-postgres.sh starts a private server and sets
// it). Without that variable the PostgreSQL tests skip, saying why.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the pgx database/sql driver
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// EnvPostgresDSN names the superuser DSN of the PostgreSQL server the tests
// use.
const EnvPostgresDSN = "MCPGATE_TEST_POSTGRES_DSN"

// Engines lists the engines a test can run on here: SQLite always,
// PostgreSQL when EnvPostgresDSN is set.
func Engines() []string {
	if os.Getenv(EnvPostgresDSN) != "" {
		return []string{db.SQLite, db.Postgres}
	}
	return []string{db.SQLite}
}

// Config returns settings for a fresh database with the demo schema on the
// engine, removed when the test ends. On PostgreSQL the test is skipped
// when no server is configured.
func Config(t testing.TB, engine string) db.Config {
	t.Helper()
	switch engine {
	case db.SQLite:
		path := filepath.Join(t.TempDir(), "data", "mcpgate.db")
		if _, err := sqlite.Ensure(context.Background(), path); err != nil {
			t.Fatalf("dbtest: create the SQLite database: %v", err)
		}
		return db.Config{Driver: db.SQLite, DSN: path}
	case db.Postgres:
		return db.Config{Driver: db.Postgres, DSN: PostgresDB(t, db.DemoSchema)}
	}
	t.Fatalf("dbtest: unknown engine %q", engine)
	return db.Config{}
}

// Postgres returns the superuser DSN, or skips the test.
func Postgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgresDSN)
	if dsn == "" {
		t.Skipf("PostgreSQL tests need %s (a superuser DSN); `make test` runs them through scripts/with-postgres.sh", EnvPostgresDSN)
	}
	return dsn
}

// PostgresDB creates a throwaway database, runs schema in it as the
// superuser, and returns its DSN. The database is dropped when the test ends.
func PostgresDB(t testing.TB, schema string) string {
	t.Helper()
	super := Postgres(t)
	name := "mcpgate_test_" + strings.ToLower(rand.Text()[:12])
	Exec(t, super, "CREATE DATABASE "+db.Quote(name))
	t.Cleanup(func() {
		ExecNoFail(super, "DROP DATABASE IF EXISTS "+db.Quote(name)+" WITH (FORCE)")
	})
	dsn := WithDatabase(t, super, name)
	if schema != "" {
		Exec(t, dsn, schema)
	}
	return dsn
}

// WithDatabase returns dsn pointed at another database.
func WithDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("dbtest: %s does not parse: %v", EnvPostgresDSN, err)
		}
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name
}

// Exec runs SQL on a fresh connection to dsn (PostgreSQL).
func Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	if err := exec(dsn, sql, args...); err != nil {
		t.Fatalf("dbtest: %s: %v", firstLine(sql), err)
	}
}

// ExecNoFail runs SQL and ignores the outcome, for clean-up.
func ExecNoFail(dsn, sql string) { _ = exec(dsn, sql) }

func exec(dsn, query string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.ExecContext(ctx, query, args...)
	return err
}

// QueryInt runs a query yielding one integer on dsn with driver ("pgx" or
// "sqlite").
func QueryInt(t testing.TB, driver, dsn, query string, args ...any) int64 {
	t.Helper()
	pool, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("dbtest: open: %v", err)
	}
	defer pool.Close()
	var n int64
	if err := pool.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("dbtest: %s: %v", query, err)
	}
	return n
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Run executes one statement in a session's transaction.
func Run(ctx context.Context, s *db.Session, stmt string) error {
	return s.Do(ctx, func(ctx context.Context, q db.Querier) error {
		_, err := q.ExecContext(ctx, stmt)
		return err
	})
}

// UserGroup is the role the tests' user roles are members of: the
// Config.UserRoleMemberOf of a test with SetRole or ConnectAsUser. It is
// cluster-wide and stays, like the roles of a real deployment.
const UserGroup = "mcp_test_users"

// JoinUserGroup makes each role a member of UserGroup, creating the group
// first when it does not exist.
func JoinUserGroup(t testing.TB, roles ...string) {
	t.Helper()
	super := Postgres(t)
	ExecNoFail(super, "CREATE ROLE "+UserGroup+" NOLOGIN") // fails when another test made it
	for _, r := range roles {
		Exec(t, super, "GRANT "+UserGroup+" TO "+db.Quote(r))
	}
}
