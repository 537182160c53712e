package sqlite

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"unsafe"

	"github.com/mcpgate/mcpgate/tools/db"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// handle is a driver connection's SQLite handle, so that a statement can be
// prepared, and its tail seen, without running it. modernc runs every
// statement of a string it is given and does not say how many there were;
// its prepared statement keeps the tail to itself. The handle is read from
// the connection's fields (db and tls), and a connection whose fields are not
// there is refused (Connect), so a driver upgrade that renames them fails
// every test instead of running scripts unchecked.
type handle struct {
	tls *libc.TLS
	db  uintptr
}

var errNoHandle = errors.New("sqlite: the driver's connection does not expose its SQLite handle, so a call cannot be held to one statement")

// handleOf reads dc's SQLite handle.
func handleOf(dc driver.Conn) (handle, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return handle{}, errNoHandle
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
		!tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || tls.IsNil() {
		return handle{}, errNoHandle
	}
	return handle{tls: (*libc.TLS)(tls.UnsafePointer()), db: uintptr(db.Uint())}, nil
}

// several reports whether SQLite reads more than one statement in query.
// SQLite's parser finds where the first statement ends (sqlite3_prepare_v2
// gives the tail), and what follows must be only white space, comments and
// semicolons. The rest is not compiled: compiling a PRAGMA applies it. A
// first statement that fails to prepare is not reported here: the driver
// fails on it the same way, before anything runs. compiled reports whether
// the first statement compiled.
func (h handle) several(query string) (compiled, several bool, err error) {
	ok, rest, err := h.first(query)
	if err != nil || !ok {
		return false, false, err
	}
	return true, strings.Trim(db.SQLiteLexer.StripComments(rest), "; \t\n\v\f\r") != "", nil
}

// first prepares the first statement of query, skipping empty ones (";"),
// finalizes it without running it, and returns the text after it. ok is
// false when no statement compiled (an error, or only comments).
func (h handle) first(query string) (ok bool, rest string, err error) {
	zSQL, err := libc.CString(query)
	if err != nil {
		return false, "", err
	}
	defer libc.Xfree(h.tls, zSQL)
	const ptr = unsafe.Sizeof(uintptr(0))           // sizeof(void *)
	out := libc.Xmalloc(h.tls, libc.Tsize_t(2*ptr)) // *sqlite3_stmt, then the tail
	if out == 0 {
		return false, "", errors.New("sqlite: cannot allocate memory to prepare a statement")
	}
	defer libc.Xfree(h.tls, out)
	word := func(p uintptr) uintptr { // the pointer SQLite wrote at p
		b := libc.GoBytes(p, int(ptr))
		if ptr == 4 {
			return uintptr(binary.NativeEndian.Uint32(b))
		}
		return uintptr(binary.NativeEndian.Uint64(b))
	}
	for z := zSQL; libc.GoBytes(z, 1)[0] != 0; {
		rc := sqlite3.Xsqlite3_prepare_v2(h.tls, h.db, z, -1, out, out+ptr)
		stmt, tail := word(out), word(out+ptr)
		if stmt != 0 {
			sqlite3.Xsqlite3_finalize(h.tls, stmt)
		}
		switch {
		case rc != sqlite3.SQLITE_OK:
			return false, "", nil
		case stmt != 0:
			return true, query[tail-zSQL:], nil
		case tail == z:
			return false, "", nil
		}
		z = tail
	}
	return false, "", nil
}
