package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

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
	// committed: a transaction was committed (Committed).
	committed bool
	dbName    string // DatabaseName's answer, read once: a connection's database does not change
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
		if s.dbName == "" {
			name, err := s.eng.DatabaseName(ctx, q)
			if err != nil {
				return err
			}
			s.dbName = name
		}
		st.Database = s.dbName
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
