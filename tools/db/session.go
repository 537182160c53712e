package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Querier runs statements inside the session's transaction. *sql.Conn is one.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Engine is what differs between databases. A Session drives the
// transaction; the engine connects, names the statements and reads the
// catalog.
type Engine interface {
	// Name is the driver name (SQLite, Postgres).
	Name() string

	// Open returns a pool for cfg that the session takes one connection
	// from. A read-only session's database must refuse writes itself (SQLite
	// mode=ro and query_only).
	Open(cfg Config, readOnly bool) (*sql.DB, error)

	// Setup prepares the session's connection: read-only, the user's role,
	// timeouts. It runs outside any transaction.
	Setup(ctx context.Context, c *sql.Conn, cfg Config, user string, readOnly bool) error

	// Begin is the statement that starts the session's transaction.
	Begin(readOnly bool) string

	// Mark records, right after Begin, what Dirty later compares with.
	Mark(ctx context.Context, q Querier) (any, error)

	// Dirty reports whether the transaction has changed anything since
	// Mark.
	Dirty(ctx context.Context, q Querier, mark any) (bool, error)

	// Check runs after every statement the session ran for a tool, before
	// its result is used: an error makes the session roll the statement back
	// and (for a security check) close. PostgreSQL checks the role is still
	// the user's.
	Check(ctx context.Context, q Querier, mark any) error

	// Classify maps an engine error to an *Error, or nil when it does not
	// recognise it.
	Classify(err error) *Error

	Catalog
}

// UserOpener is an Engine that can log in as the session's user (PostgreSQL
// with Config.ConnectAsUser): Open calls OpenAs instead of Engine.Open.
type UserOpener interface {
	OpenAs(cfg Config, user string, readOnly bool) (*sql.DB, error)
}

// CallGuard is an Engine with statements that confine one tool call
// (PostgreSQL), beyond what the call's savepoint undoes.
type CallGuard interface {
	// ReadOnlyCall runs right after a Read's savepoint and makes the rest
	// of the call read-only, even in a read-write session, so that what a
	// rollback cannot undo (setval, nextval) is refused rather than kept.
	// The rollback to the savepoint restores the setting.
	ReadOnlyCall() string

	// EndCall runs after every call and releases what a statement can hold
	// past its transaction (session advisory locks), so that it cannot
	// outlive the call.
	EndCall() string
}

// Reaper is an Engine whose server can go on running a statement after
// the session gave up on its connection (PostgreSQL: a statement that
// catches every cancel keeps its locks until its backend ends).
type Reaper interface {
	// Backend identifies the server side of the session's connection; it
	// runs once, after Setup.
	Backend(ctx context.Context, c *sql.Conn) (any, error)

	// Reap ends that server side from another connection of the pool,
	// when the session closes a connection it could not roll back.
	Reap(ctx context.Context, pool *sql.DB, backend any) error
}

// Execer is an Engine that runs a tool's ExecContext its own way.
// PostgreSQL does: the driver would send an argument-less statement over the
// simple protocol, which runs every command in the string, so one that
// Split cut wrongly would run commands the tools never checked (a COMMIT, a
// role change). Over the extended protocol the server refuses a string of
// several commands.
type Execer interface {
	Exec(ctx context.Context, c *sql.Conn, query string, args ...any) (sql.Result, error)
}

// execQuerier is the session's connection with ExecContext routed to an
// Execer.
type execQuerier struct {
	*sql.Conn
	ex Execer
}

func (q execQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.ex.Exec(ctx, q.Conn, query, args...)
}

// Session is one MCP session's database: one connection and one open
// transaction, so that its uncommitted changes are invisible to every other
// session. Statements run one at a time; a tool's statement runs under a
// savepoint, so that its failure undoes only itself and leaves the session's
// earlier uncommitted work in place.
type Session struct {
	eng      Engine
	cfg      Config
	user     string
	readOnly bool
	pool     *sql.DB
	conn     *sql.Conn

	// Now is the clock for the transaction's age; time.Now by default.
	Now func() time.Time

	lock    chan struct{} // held while a statement runs
	backend any           // the connection's server side, for a Reaper
	began   time.Time
	mark    any
	closed  bool
}

// Open connects a session for user and begins its transaction.
func Open(ctx context.Context, eng Engine, cfg Config, user string, readOnly bool) (*Session, error) {
	cfg = cfg.WithDefaults()
	var pool *sql.DB
	var err error
	if uo, ok := eng.(UserOpener); ok {
		pool, err = uo.OpenAs(cfg, user, readOnly)
	} else {
		pool, err = eng.Open(cfg, readOnly)
	}
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(1)
	pool.SetMaxIdleConns(1)
	pool.SetConnMaxLifetime(0)
	pool.SetConnMaxIdleTime(0)
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("db: connect to %s: %w", eng.Name(), err)
	}
	s := &Session{eng: eng, cfg: cfg, user: user, readOnly: readOnly, pool: pool, conn: conn, Now: time.Now, lock: make(chan struct{}, 1)}
	if err := eng.Setup(ctx, conn, cfg, user, readOnly); err != nil {
		s.closeConn()
		return nil, err
	}
	if r, ok := eng.(Reaper); ok {
		if s.backend, err = r.Backend(ctx, conn); err != nil {
			s.closeConn()
			return nil, fmt.Errorf("db: set up the session: %w", err)
		}
	}
	if err := s.begin(ctx); err != nil {
		s.closeConn()
		return nil, err
	}
	return s, nil
}

// Engine returns the engine's name.
func (s *Session) Engine() string { return s.eng.Name() }

// Catalog returns the engine's catalog queries.
func (s *Session) Catalog() Catalog { return s.eng }

// ReadOnly reports whether the session is read-only.
func (s *Session) ReadOnly() bool { return s.readOnly }

// Config returns the session's settings, with defaults applied.
func (s *Session) Config() Config { return s.cfg }

// User returns the session's user.
func (s *Session) User() string { return s.user }

// acquire takes the statement lock, or gives up when ctx ends.
func (s *Session) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return classify(s.eng, ctx, ctx.Err())
	}
	if s.closed {
		<-s.lock
		return &Error{Kind: KindOther, Message: ErrClosed.Error(), Err: ErrClosed}
	}
	return nil
}

func (s *Session) release() { <-s.lock }

// Do runs fn inside the session's transaction, under a savepoint and the
// statement timeout. If fn or the engine's check fails, the savepoint is
// rolled back and the error is returned as an *Error.
func (s *Session) Do(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	return s.do(ctx, fn)
}

func (s *Session) do(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	err := s.call(ctx, fn)
	if g, ok := s.eng.(CallGuard); ok && !s.closed {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, gerr := s.conn.ExecContext(uctx, g.EndCall()); gerr != nil && err == nil {
			return s.fail(classify(s.eng, uctx, gerr))
		}
	}
	return err
}

// call is do's statement under the savepoint.
func (s *Session) call(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StatementTimeout+s.grace())
	defer cancel()
	if _, err := s.conn.ExecContext(sctx, "SAVEPOINT mcpgate_call"); err != nil {
		return s.fail(classify(s.eng, sctx, err))
	}
	var q Querier = s.conn
	if ex, ok := s.eng.(Execer); ok {
		q = execQuerier{s.conn, ex}
	}
	err := fn(sctx, q)
	undo := errors.Is(err, errUndo)
	if err == nil || undo {
		if cerr := s.eng.Check(sctx, s.conn, s.mark); cerr != nil {
			var de *Error
			if errors.As(cerr, &de) && de.Kind == KindRefused {
				// A security check failed: nothing of this transaction may
				// be committed, and the connection is not to be trusted.
				s.abortAndClose()
				return de
			}
			// A read's result is in hand and its savepoint is rolled back
			// next either way; the check can fail only because the
			// statement was stopped after the reader stopped reading (the
			// transaction is then aborted).
			if !undo {
				err = cerr
			}
		}
	}
	if err == nil {
		if _, rerr := s.conn.ExecContext(sctx, "RELEASE SAVEPOINT mcpgate_call"); rerr != nil {
			return s.fail(classify(s.eng, sctx, rerr))
		}
		return nil
	}
	var de *Error
	if !undo {
		de = classify(s.eng, sctx, err)
	}
	// The statement's own context may be dead (a timeout or a cancel), so
	// the undo gets a fresh one.
	uctx, ucancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ucancel()
	if _, rerr := s.conn.ExecContext(uctx, "ROLLBACK TO SAVEPOINT mcpgate_call"); rerr != nil {
		if de == nil {
			de = classify(s.eng, uctx, rerr)
		}
		return s.fail(de)
	}
	s.conn.ExecContext(uctx, "RELEASE SAVEPOINT mcpgate_call") //nolint:errcheck // best effort; the savepoint is already undone
	if de == nil {
		return nil
	}
	return de
}

// TimeoutGrace is an Engine whose server stops a statement at the statement
// timeout itself (PostgreSQL's statement_timeout): the session's own
// deadline comes that much later, so that the server's clean stop, which
// leaves the connection usable, comes first.
type TimeoutGrace interface {
	TimeoutGrace() time.Duration
}

func (s *Session) grace() time.Duration {
	if g, ok := s.eng.(TimeoutGrace); ok {
		return g.TimeoutGrace()
	}
	return 0
}

// fail handles an error that leaves the transaction in an unknown state: it
// rolls back, starts afresh, and says that uncommitted work was lost.
func (s *Session) fail(e *Error) *Error {
	uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.conn.ExecContext(uctx, "ROLLBACK") //nolint:errcheck // the transaction may already be gone
	if err := s.begin(uctx); err != nil {
		s.abortAndClose()
		// Say why first: the statement's error is what to fix.
		return &Error{Kind: KindOther, Code: e.Code, Message: e.Message + "; " + ErrClosed.Error(), Err: errors.Join(e, err)}
	}
	return &Error{Kind: e.Kind, Code: e.Code, Message: e.Message + " (the transaction was rolled back: uncommitted changes are lost)", Err: e}
}

func (s *Session) begin(ctx context.Context) error {
	if _, err := s.conn.ExecContext(ctx, s.eng.Begin(s.readOnly)); err != nil {
		return fmt.Errorf("db: begin a transaction: %w", err)
	}
	mark, err := s.eng.Mark(ctx, s.conn)
	if err != nil {
		return fmt.Errorf("db: begin a transaction: %w", err)
	}
	s.mark, s.began = mark, s.Now()
	return nil
}

// dirty reports whether the transaction has uncommitted changes. A
// read-only session has none, whatever the engine's sign of a write says
// (PostgreSQL's: a transaction id, which pg_current_xact_id() takes too).
func (s *Session) dirty(ctx context.Context, q Querier) (bool, error) {
	if s.readOnly {
		return false, nil
	}
	return s.eng.Dirty(ctx, q, s.mark)
}

// Commit commits the transaction and begins the next one.
func (s *Session) Commit(ctx context.Context) error {
	return s.end(ctx, "COMMIT")
}

// Abort discards the transaction's changes and begins afresh.
func (s *Session) Abort(ctx context.Context) error {
	return s.end(ctx, "ROLLBACK")
}

// Refresh begins a new transaction so that the session sees what other
// sessions have committed. It refuses, with kind conflict, when the
// transaction has uncommitted changes.
func (s *Session) Refresh(ctx context.Context) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	dirty, err := s.dirty(ctx, s.conn)
	if err != nil {
		return classify(s.eng, ctx, err)
	}
	if dirty {
		return Errorf(KindConflict, "db: the transaction has uncommitted changes; commit or abort them first, then refresh")
	}
	return s.restart(ctx, "ROLLBACK")
}

func (s *Session) end(ctx context.Context, stmt string) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	return s.restart(ctx, stmt)
}

// restart ends the transaction with stmt (COMMIT or ROLLBACK) and begins the
// next. A failed COMMIT has rolled back; the session still goes on.
func (s *Session) restart(ctx context.Context, stmt string) error {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StatementTimeout)
	defer cancel()
	_, err := s.conn.ExecContext(sctx, stmt)
	if err != nil {
		e := classify(s.eng, sctx, err)
		return s.fail(e)
	}
	if err := s.begin(sctx); err != nil {
		s.abortAndClose()
		return &Error{Kind: KindOther, Message: ErrClosed.Error(), Err: err}
	}
	return nil
}

// CommitAfter runs fn as Do does and commits when it succeeds, as one step
// that no other statement of the session can come between. The mutation
// tools use it: each commits, so that no schema change holds its locks
// in an open transaction.
func (s *Session) CommitAfter(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if err := s.do(ctx, fn); err != nil {
		return err
	}
	return s.restart(ctx, "COMMIT")
}

// Status describes the session for the status tool.
type Status struct {
	Engine         string        `json:"engine"`
	Database       string        `json:"database"`
	ReadOnly       bool          `json:"readOnly"`
	Uncommitted    bool          `json:"uncommittedChanges"`
	TransactionAge time.Duration `json:"-"`
}

// Status reports the session's state.
func (s *Session) Status(ctx context.Context) (Status, error) {
	if err := s.acquire(ctx); err != nil {
		return Status{}, err
	}
	defer s.release()
	st := Status{Engine: s.eng.Name(), ReadOnly: s.readOnly, TransactionAge: s.Now().Sub(s.began)}
	err := s.do(ctx, func(ctx context.Context, q Querier) error {
		name, err := s.eng.DatabaseName(ctx, q)
		st.Database = name
		if err != nil {
			return err
		}
		st.Uncommitted, err = s.dirty(ctx, q)
		return err
	})
	return st, err
}

// Closed reports whether the session is closed: by Close, or because a
// security check failed or a transaction could not be begun again.
func (s *Session) Closed() bool {
	s.lock <- struct{}{}
	defer s.release()
	return s.closed
}

// Close rolls back and closes the connection.
func (s *Session) Close() error {
	s.lock <- struct{}{}
	defer s.release()
	if s.closed {
		return nil
	}
	return s.closeConn()
}

func (s *Session) abortAndClose() {
	s.closeConn() //nolint:errcheck // closing discards the transaction
}

// closeConn rolls back and closes. When the rollback fails (the
// connection was given up on, a statement ignored its cancel), the server
// side may still run and hold locks: a Reaper ends it from a fresh
// connection.
func (s *Session) closeConn() error {
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, rerr := s.conn.ExecContext(ctx, "ROLLBACK")
	err := s.conn.Close()
	if r, ok := s.eng.(Reaper); ok && rerr != nil && s.backend != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		if reapErr := r.Reap(rctx, s.pool, s.backend); reapErr != nil {
			err = errors.Join(err, fmt.Errorf("db: end the abandoned connection's server side: %w", reapErr))
		}
	}
	return errors.Join(err, s.pool.Close())
}

// Read runs fn as Do does, then always rolls its savepoint back, so that
// whatever fn's statement did is undone even in a read-write session. The
// query tool and the checks use it.
func (s *Session) Read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	return s.do(ctx, func(ctx context.Context, q Querier) error {
		if g, ok := s.eng.(CallGuard); ok && !s.readOnly {
			if _, err := s.conn.ExecContext(ctx, g.ReadOnlyCall()); err != nil {
				return err
			}
		}
		// The mark lets the engine refuse writes in fn's statements
		// themselves (SQLite), beyond undoing them afterwards.
		if err := fn(ReadContext(ctx), q); err != nil {
			return err
		}
		return errUndo
	})
}

// errUndo makes do roll a successful read's savepoint back.
var errUndo = errors.New("db: undo")

// Classify turns an error from a statement run through Do into an *Error
// with a kind, as Do itself would; ctx is the statement's context.
func (s *Session) Classify(ctx context.Context, err error) *Error {
	return classify(s.eng, ctx, err)
}

// ServerRefusal is an Engine that can tell an error the database server
// itself sent (a refused login, say) from one that means no server
// answered; Ping counts the former as an answer.
type ServerRefusal interface {
	ServerRefused(err error) bool
}

// Ping reports whether cfg's database answers: it opens a read-only pool
// with eng, pings it once within ctx, and closes it. It is the gateway's
// readiness check; it runs as no session's user, so a login the server
// refuses still counts as an answer (ServerRefusal). The error never holds
// the DSN.
func Ping(ctx context.Context, eng Engine, cfg Config) error {
	pool, err := eng.Open(cfg, true)
	if err != nil {
		return fmt.Errorf("db: %s: opening: %w", eng.Name(), err)
	}
	defer pool.Close()
	err = pool.PingContext(ctx)
	if sr, ok := eng.(ServerRefusal); ok && err != nil && sr.ServerRefused(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("db: %s does not answer: %w", eng.Name(), err)
	}
	return nil
}
