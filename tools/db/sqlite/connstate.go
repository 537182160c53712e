package sqlite

import (
	"context"

	"github.com/mcpgate/mcpgate/tools/db"
)

var _ db.ConnState = Engine{}

// connStateQuery sums up what a statement can leave on a connection past
// its transaction: temporary objects, and the settings a client may change
// (guard.go's setPragmas) that a rollback does not undo. case_sensitive_like
// cannot be read as a pragma, so LIKE itself is asked.
const connStateQuery = `SELECT (SELECT count(*) FROM temp.sqlite_schema) || ';' ||
	(SELECT recursive_triggers FROM pragma_recursive_triggers) || ';' ||
	(SELECT reverse_unordered_selects FROM pragma_reverse_unordered_selects) || ';' ||
	('a' LIKE 'A')`

// ConnState describes the connection's state beyond its transaction
// (db.ConnState): an idle session whose connection holds more than Setup
// left keeps it, since closing it would drop the user's temporary tables or
// settings, and a connection that does is not reused for another call.
func (Engine) ConnState(ctx context.Context, q db.Querier) (string, error) {
	var s string
	err := q.QueryRowContext(ctx, connStateQuery).Scan(&s)
	return s, err
}
