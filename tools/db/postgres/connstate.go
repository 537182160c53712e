package postgres

import (
	"context"

	"github.com/mcpgate/mcpgate/tools/db"
)

var _ db.ConnState = Engine{}

// connStateQuery sums up what a statement can leave on a connection past
// its transaction: temporary tables, settings changed for the session
// (SET, set_config), prepared statements and held cursors made in SQL, and
// LISTEN channels. Setup's own settings are in the baseline.
const connStateQuery = `SELECT concat_ws(';',
	(SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema()),
	(SELECT pg_catalog.string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_catalog.pg_settings WHERE source = 'session'),
	(SELECT count(*) FROM pg_catalog.pg_prepared_statements WHERE from_sql),
	(SELECT count(*) FROM pg_catalog.pg_cursors),
	(SELECT count(*) FROM pg_catalog.pg_listening_channels()))`

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
