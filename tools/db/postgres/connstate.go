package postgres

import (
	"context"

	"github.com/mcpgate/mcpgate/tools/db"
)

var _ db.ConnState = Engine{}

// connStateQuery sums up what a statement can leave on a connection past
// its transaction: temporary tables, settings changed for the session
// (SET, set_config), prepared statements and held cursors made in SQL, and
// LISTEN channels. Setup's own settings are in the baseline. Every function
// and operator is qualified: the query runs at every connect and idle
// release, outside a tool call, and a function of the user's with the
// exact argument types (concat_ws(text, bigint, text, …) against
// pg_catalog's VARIADIC "any") would win over pg_catalog's whatever the
// search_path.
const connStateQuery = `SELECT pg_catalog.concat_ws(';'::pg_catalog.text,
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_class WHERE relnamespace OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema()),
	(SELECT pg_catalog.string_agg(pg_catalog.concat(name, '='::pg_catalog.text, setting), ','::pg_catalog.text ORDER BY name) FROM pg_catalog.pg_settings WHERE source OPERATOR(pg_catalog.=) 'session'::pg_catalog.text),
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements WHERE from_sql),
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_cursors),
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_listening_channels()))`

// ConnState describes the connection's state beyond its transaction
// (db.ConnState): an idle session whose connection holds more than Setup
// left keeps it, since closing it would drop the user's temporary tables
// or settings.
func (Engine) ConnState(ctx context.Context, q db.Querier) (string, error) {
	ctx = context.WithValue(ctx, ownKey{}, true) // the session's own statement, past the side-effect guard
	var s string
	err := q.QueryRowContext(ctx, connStateQuery).Scan(&s)
	return s, err
}
