package sqlite

import (
	"context"
	"strconv"

	"github.com/mcpgate/mcpgate/tools/db"
)

var _ db.ConnState = Engine{}

// ConnState counts the connection's temporary objects (db.ConnState): an
// idle session that made some keeps its connection, since closing it would
// drop them.
func (Engine) ConnState(ctx context.Context, q db.Querier) (string, error) {
	var n int64
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM temp.sqlite_schema").Scan(&n)
	return strconv.FormatInt(n, 10), err
}
