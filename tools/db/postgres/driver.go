package postgres

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mcpgate/mcpgate/tools/db"
)

// drainGrace is how long closing a read's unfinished rows may take before
// the statement is cancelled.
const drainGrace = 100 * time.Millisecond

// connector is pgx's database/sql connector with conns that guard reads
// (refuseSideEffect) and whose read results stop their statement when
// closed early.
type connector struct {
	driver.Connector
	readOnly bool // the session's
}

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{dc.(*stdlib.Conn), c.readOnly}, nil
}

// conn is pgx's conn with a read's statements guarded and its rows
// wrapped.
type conn struct {
	*stdlib.Conn
	readOnly bool
}

// ownKey marks a context whose statements are the engine's own, not a
// client's (Reap's pg_terminate_backend); only this package sets it.
type ownKey struct{}

// guard refuses a read's statement, or a read-only session's, that calls
// a function whose effect outlives the transaction.
func (c *conn) guard(ctx context.Context, query string) error {
	if ctx.Value(ownKey{}) != nil {
		return nil
	}
	if c.readOnly || db.Reading(ctx) {
		return refuseSideEffect(query)
	}
	return nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.guard(ctx, query); err != nil {
		return nil, err
	}
	return c.Conn.ExecContext(ctx, query, args)
}

// rawConn returns the connection under a database/sql driver conn, after
// the guard for the statement.
func rawConn(ctx context.Context, dc any, query string) (*pgconn.PgConn, error) {
	c := dc.(*conn)
	if err := c.guard(ctx, query); err != nil {
		return nil, err
	}
	return c.Conn.Conn().PgConn(), nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.guard(ctx, query); err != nil {
		return nil, err
	}
	r, err := c.Conn.QueryContext(ctx, query, args)
	if err != nil || !db.Reading(ctx) {
		return r, err
	}
	return &rows{Rows: r.(*stdlib.Rows), pg: c.Conn.Conn().PgConn()}, nil
}

// rows are a read's rows. pgx reads every remaining row when rows are
// closed, so a reader that stops at its row cap would wait for the whole
// result (SELECT generate_series(1, 1e11): until the statement timeout).
// When closing takes longer than drainGrace, the statement is cancelled;
// the read's savepoint is rolled back afterwards in any case. A result
// that has ended already closes at once, without a cancel.
type rows struct {
	*stdlib.Rows
	pg   *pgconn.PgConn
	done bool
}

func (r *rows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	r.done = err != nil
	return err
}

func (r *rows) Close() error {
	if r.done {
		return r.Rows.Close()
	}
	sent := make(chan struct{})
	t := time.AfterFunc(drainGrace, func() {
		defer close(sent)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.pg.CancelRequest(ctx) //nolint:errcheck // the statement then ends at its timeout instead
	})
	err := r.Rows.Close()
	if !t.Stop() {
		// The cancel has been sent or is being sent: wait for it, so that it
		// cannot reach the connection's next statement.
		<-sent
	}
	return err
}
