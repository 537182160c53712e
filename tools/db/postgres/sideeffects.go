package postgres

import (
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// Functions whose effect outlives the transaction that calls them, which
// query and read-only sessions refuse to call. Each writes to the server
// or to another connection where the call's rollback and the transaction's
// READ ONLY do not reach:
//   - pg_logical_emit_message: WAL that logical decoding passes on, even
//     with transactional = false in a read-only transaction;
//   - dblink…: statements on another connection, outside the session;
//   - lo_export, pg_file_…: server files;
//   - pg_stat_reset…, pg_stat_statements_reset, pg_switch_wal,
//     pg_create_restore_point, pg_reload_conf, pg_rotate_logfile,
//     pg_promote, pg_log_backend_memory_contexts: server state and logs;
//   - replication slots and origins: what logical decoding consumers see;
//   - pg_terminate_backend, pg_cancel_backend: another backend's statement
//     or session (every worker connects as one role unless connect_as_user,
//     so any user's read could end another user's read-write session and
//     its uncommitted work), or the caller's own session;
//   - query_to_xml…, ts_stat, ts_rewrite: they run SQL given as a string,
//     which could be built to call any of the above out of the guard's
//     sight.
//
// The rest need no refusal: the call's savepoint is rolled back (a
// transaction advisory lock, set_config(…, false), pg_notify, large
// objects), the transaction's READ ONLY refuses them (nextval, setval,
// lo_create), or the session releases them after every call (session
// advisory locks). This is a guard on the statement's text: it cannot see a
// function that calls one of these (a view, a wrapper), which only the
// server's privileges stop; docs/tools.md gives the REVOKE.
var sideEffectNames = map[string]bool{
	"pg_logical_emit_message":            true,
	"lo_export":                          true,
	"lo_import":                          true,
	"pg_switch_wal":                      true,
	"pg_create_restore_point":            true,
	"pg_reload_conf":                     true,
	"pg_rotate_logfile":                  true,
	"pg_promote":                         true,
	"pg_log_backend_memory_contexts":     true,
	"pg_stat_statements_reset":           true,
	"pg_logical_slot_get_changes":        true,
	"pg_logical_slot_get_binary_changes": true,
	"ts_stat":                            true,
	"ts_rewrite":                         true,
	"pg_terminate_backend":               true,
	"pg_cancel_backend":                  true,
}

var sideEffectPrefixes = []string{"dblink", "query_to_xml", "pg_file_", "pg_stat_reset", "pg_replication_origin_", "pg_create_physical_replication_slot", "pg_create_logical_replication_slot", "pg_drop_replication_slot", "pg_copy_physical_replication_slot", "pg_copy_logical_replication_slot", "pg_replication_slot_advance"}

// sideEffect returns the name of a function in sideEffectNames that the
// statement calls wherever (also in a string or a comment: a false alarm
// there costs a reworded statement), quoted or not, in any case: a name
// followed by an argument list, or a name after a dot (fieldCall). A
// Unicode escape identifier (U&"…") could spell one, so it counts as one.
func sideEffect(query string) string {
	s := strings.ToLower(strings.ReplaceAll(query, `"`, ""))
	if strings.Contains(strings.ToLower(query), `u&"`) {
		return `a U&"…" identifier`
	}
	isWord := func(c byte) bool {
		return c == '_' || c == '$' || c >= 0x80 || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(s); {
		if !isWord(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWord(s[j]) {
			j++
		}
		w := s[i:j]
		i = j
		if calls(s[j:]) && sideEffectName(w) {
			return w
		}
	}
	return fieldCall(query)
}

// sideEffectName reports whether w (lower case) names a function of
// sideEffectNames or sideEffectPrefixes.
func sideEffectName(w string) bool {
	if sideEffectNames[w] {
		return true
	}
	for _, p := range sideEffectPrefixes {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// fieldCall returns a function of sideEffectNames written in functional
// notation, (x).f for f(x), which PostgreSQL accepts for any function of one
// argument (or with defaults for the rest): (pid).pg_terminate_backend, or
// ('SELECT …'::text).ts_stat, which runs SQL built out of the guard's sight.
// It reads the tokens after a dot, outside strings and comments, as the
// server does; and again as the server does when a session has set
// standard_conforming_strings off (a backslash then escapes a quote in '…'),
// so that a string read the other way cannot hide one.
func fieldCall(query string) string {
	escaped := strings.NewReplacer(`\\`, "  ", `\'`, "''").Replace(query)
	for _, q := range []string{query, escaped} {
		t := db.PostgresLexer.Tokens(q)
		for i := 1; i < len(t); i++ {
			if w := strings.ToLower(strings.Trim(t[i], `"`)); t[i-1] == "." && sideEffectName(w) {
				return w
			}
		}
	}
	return ""
}

// calls reports whether rest, the text after a name, opens an argument
// list: "(" after any spaces and comments.
func calls(rest string) bool {
	for {
		rest = strings.TrimLeft(rest, " \t\r\n\f\v")
		switch {
		case strings.HasPrefix(rest, "--"):
			i := strings.IndexByte(rest, '\n')
			if i < 0 {
				return false
			}
			rest = rest[i:]
		case strings.HasPrefix(rest, "/*"):
			// Comments nest; an unclosed one runs to the end.
			depth, i := 1, 2
			for i < len(rest) && depth > 0 {
				switch {
				case strings.HasPrefix(rest[i:], "/*"):
					depth, i = depth+1, i+2
				case strings.HasPrefix(rest[i:], "*/"):
					depth, i = depth-1, i+2
				default:
					i++
				}
			}
			rest = rest[i:]
		default:
			return strings.HasPrefix(rest, "(")
		}
	}
}

// refuseSideEffect refuses a statement of a read (query, a catalog tool,
// a check) or of a read-only session that names a function of
// sideEffectNames.
func refuseSideEffect(query string) error {
	if f := sideEffect(query); f != "" {
		return db.Errorf(db.KindRefused, "postgres: query and read-only sessions do not call %s: its effect outlives the transaction, which query always rolls back; use execute_sql in a read-write session (the statement's text names it, perhaps in a string or a comment: reword it if so)", f)
	}
	return nil
}
