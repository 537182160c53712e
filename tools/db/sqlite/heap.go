package sqlite

import (
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate/tools/db"
	"modernc.org/sqlite"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// heapErr is why SQLite's heap could not be bounded, or nil.
var heapErr = countHeap()

// countHeap turns on SQLite's memory statistics, which the driver's build
// leaves off (SQLITE_DEFAULT_MEMSTATUS=0): without them SQLite does not
// count its heap, and PRAGMA hard_heap_limit, which bounds a row while the
// driver reads it (db.MaxRowBytes), has no effect. It must run before
// SQLite initializes, that is before the process opens its first
// connection, so it runs when the package is initialized.
func countHeap() error {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.Xmalloc(tls, 8)
	if va == 0 {
		return fmt.Errorf("sqlite: out of memory")
	}
	defer libc.Xfree(tls, va)
	var on int32 = 1
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, libc.VaList(va, on)); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite: turning on memory statistics failed (result code %d); the row bound would have no effect", rc)
	}
	return nil
}

// bound wraps the driver's rows so that a row over SQLite's heap bound ends
// them with db.ErrRowTooLarge. The driver reads the first row when it runs
// the query: a first row over the bound gives rows that end at once.
func bound(r driver.Rows, err error) (driver.Rows, error) {
	if noMem(err) {
		return tooLarge{err}, nil
	}
	if err != nil {
		return nil, err
	}
	return boundedRows{r}, nil
}

func noMem(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOMEM
}

// tooLarge is a result whose first row was over the bound.
type tooLarge struct{ err error }

func (tooLarge) Columns() []string { return []string{} }
func (tooLarge) Close() error      { return nil }
func (r tooLarge) Next([]driver.Value) error {
	return fmt.Errorf("%w: %w", db.ErrRowTooLarge, r.err)
}

// boundedRows reports a row that did not fit in SQLite's heap as
// db.ErrRowTooLarge. SQLite may run out while the driver copies a row's
// values (sqlite3_column_blob returns NULL, which the driver takes for an
// empty value) and say so only at the next step, so the row before the
// error is suspect too; db.Scan drops it.
type boundedRows struct{ driver.Rows }

// Next reads the next row.
func (r boundedRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if noMem(err) {
		return fmt.Errorf("%w: %w", db.ErrRowTooLarge, err)
	}
	return err
}
