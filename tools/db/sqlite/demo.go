package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate/tools/db"
)

// Ensure creates the SQLite database file at path with the demo schema
// (db.DemoSchema) unless it exists, and reports whether it created it. The
// file appears whole or not at all: it is built under a temporary name and
// linked into place, so two workers starting at once cannot see a half-made
// database, and an existing file is never touched. The gateway's `make run`
// and the tests use it, as does a worker that finds no file.
func Ensure(ctx context.Context, path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("sqlite: database %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return false, fmt.Errorf("sqlite: create the data directory: %w", err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+rand.Text()+".tmp")
	defer os.Remove(tmp)
	if err := create(ctx, tmp, db.DemoSchema); err != nil {
		return false, err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil // another worker won the race
		}
		return false, fmt.Errorf("sqlite: put the new database in place: %w", err)
	}
	return true, nil
}

// create makes a WAL-mode database at path and runs schema in it.
func create(ctx context.Context, path, schema string) error {
	d, err := dsn(path, "rwc", 5000)
	if err != nil {
		return err
	}
	pool, err := sql.Open("sqlite", d)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	defer pool.Close()
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("sqlite: load the demo schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: load the demo schema: %w", err)
	}
	// Fold the WAL into the file before it is linked into place.
	if _, err := pool.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("sqlite: checkpoint %s: %w", path, err)
	}
	return pool.Close()
}
