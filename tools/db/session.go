package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session is one MCP session's database: one connection and, from its first
// statement until commit, abort or refresh, one transaction, so that its
// uncommitted changes are invisible to every other session. Statements run
// one at a time; a tool's statement runs under a savepoint, so that its
// failure undoes only itself and leaves the session's earlier uncommitted
// work in place. An idle session gives back what it holds (idle.go): a
// transaction without changes ends, and then the connection closes, until
// the next statement opens them again.
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
	inTx    bool          // a transaction is open on conn
	began   time.Time
	mark    any
	closed  bool
	dbName  string // DatabaseName's answer, read once: a connection's database does not change
	// committed: a transaction was committed on the current connection
	// (Committed); a new connection starts clean.
	committed bool

	idle      time.Duration // Config.IdleRelease; 0: hold everything until Close
	idleTimer *time.Timer   // runs ReleaseIdle after idle without a statement
	baseline  string        // ConnState's answer right after Setup
	// lost: the idle release gave up a connection whose transaction may
	// have held uncommitted writes; the next statement or commit says so.
	lost bool
}

// Open connects a session for user, so that a bad setting fails here, and
// reads the database's name. The transaction begins at the first statement.
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
	// No idle connection in the pool: the session holds its one, and a
	// connection it gives back (idle.go) closes, so that the server's
	// slot is free.
	pool.SetMaxIdleConns(0)
	pool.SetConnMaxLifetime(0)
	pool.SetConnMaxIdleTime(0)
	s := &Session{eng: eng, cfg: cfg, user: user, readOnly: readOnly, pool: pool, Now: time.Now, lock: make(chan struct{}, 1), idle: cfg.IdleRelease}
	if err := s.connect(ctx); err != nil {
		s.closeConn()
		return nil, err
	}
	name, err := eng.DatabaseName(ctx, s.conn)
	if err != nil {
		s.closeConn()
		return nil, fmt.Errorf("db: set up the session: %w", err)
	}
	s.dbName = name
	s.lock <- struct{}{}
	s.idleAfter() // a session that never runs a statement gives its connection back too
	return s, nil
}

// connect takes the session's connection and sets it up for its user.
func (s *Session) connect(ctx context.Context) error {
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("db: connect to %s: %w", s.eng.Name(), err)
	}
	s.conn = conn
	if err := s.eng.Setup(ctx, conn, s.cfg, s.user, s.readOnly); err != nil {
		s.dropConn()
		return err
	}
	if r, ok := s.eng.(Reaper); ok {
		if s.backend, err = r.Backend(ctx, conn); err != nil {
			s.dropConn()
			return fmt.Errorf("db: set up the session: %w", err)
		}
	}
	if cs, ok := s.eng.(ConnState); ok {
		if s.baseline, err = cs.ConnState(ctx, conn); err != nil {
			s.dropConn()
			return fmt.Errorf("db: set up the session: %w", err)
		}
	}
	return nil
}

// dropConn closes a connection that holds no transaction.
func (s *Session) dropConn() {
	s.conn.Close() //nolint:errcheck // the pool keeps no idle connection: this closes it
	s.conn, s.backend, s.inTx, s.committed = nil, nil, false, false
}

// ready gives a statement what it needs: the connection (again, after an
// idle session gave it back) and an open transaction.
func (s *Session) ready(ctx context.Context) error {
	if s.lost {
		s.lost = false
		return errLost
	}
	if s.conn == nil {
		if err := s.connect(ctx); err != nil {
			// The server refused (too many clients, say) or did not
			// answer: this statement fails, the session does not.
			if e := s.eng.Classify(err); e != nil {
				return e
			}
			return &Error{Kind: KindOther, Message: err.Error() + "; nothing was run, and the session goes on: try again", Err: err}
		}
	}
	if !s.inTx {
		if err := s.begin(ctx); err != nil {
			s.abandonConn() // the next statement starts from a fresh connection
			return classify(s.eng, ctx, err)
		}
	}
	return nil
}

// errLost is the answer to the statement or commit after the idle release
// gave up a connection that may have held uncommitted writes.
var errLost = &Error{Kind: KindConflict, Message: "db: the session's connection ended while it was idle (the database server closed it), and its transaction was rolled back: uncommitted changes are lost; nothing was run: run the transaction's statements again"}

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

// Status describes the session for the status tool.
type Status struct {
	Engine      string `json:"engine"`
	Database    string `json:"database"`
	ReadOnly    bool   `json:"readOnly"`
	Transaction bool   `json:"transactionOpen"`
	Uncommitted bool   `json:"uncommittedChanges"`
	// TransactionAge is the open transaction's age; 0 when none is open.
	TransactionAge time.Duration `json:"-"`
}

// Status reports the session's state. It opens nothing: without an open
// transaction there is nothing uncommitted, and no statement is run.
func (s *Session) Status(ctx context.Context) (Status, error) {
	if err := s.acquire(ctx); err != nil {
		return Status{}, err
	}
	defer s.idleAfter()
	st := Status{Engine: s.eng.Name(), Database: s.dbName, ReadOnly: s.readOnly, Transaction: s.inTx}
	if !s.inTx {
		return st, nil
	}
	st.TransactionAge = s.Now().Sub(s.began)
	err := s.do(ctx, func(ctx context.Context, q Querier) error {
		var err error
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
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
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
	if s.conn == nil {
		return s.pool.Close()
	}
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
