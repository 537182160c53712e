package db

import (
	"context"
	"time"
)

// What an idle session gives back. A transaction holds a snapshot (REPEATABLE
// READ on PostgreSQL, a read transaction on SQLite) that keeps vacuum from
// removing old rows, or a WAL checkpoint from passing it, for as long as it
// is open; a connection holds one of the server's max_connections slots.
// Neither is of use to a session that runs no statement. After
// Config.IdleRelease without a statement a session:
//
//   - ends a transaction that has no uncommitted changes (a read-only
//     session's always): its next statement begins a fresh one, which sees
//     what others committed meanwhile, as after refresh;
//   - keeps a transaction that has uncommitted changes, and its connection,
//     until commit or abort, or until the session ends (which rolls back):
//     writes are never dropped behind the user's back;
//   - then closes a connection with no transaction open, unless a statement
//     left state on it that a new connection would not have (ConnState:
//     temporary tables, session settings): that is the user's, and stays.

// ConnState is an Engine whose connection can hold state of the user's
// beyond a transaction. Its answer right after Setup is the baseline; an
// idle session whose connection answers differently keeps the connection.
type ConnState interface {
	ConnState(ctx context.Context, q Querier) (string, error)
}

// idleAfter releases the statement lock and arms the idle release.
func (s *Session) idleAfter() {
	if s.idle > 0 && !s.closed && s.conn != nil {
		if s.idleTimer == nil {
			s.idleTimer = time.AfterFunc(s.idle, s.releaseIdle)
		} else {
			s.idleTimer.Reset(s.idle)
		}
	}
	s.release()
}

func (s *Session) releaseIdle() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StatementTimeout)
	defer cancel()
	s.ReleaseIdle(ctx)
}

// Released says what ReleaseIdle did.
type Released struct {
	Transaction bool // a transaction without changes was ended
	Connection  bool // the connection was closed
}

// ReleaseIdle gives back what the session holds and does not need while no
// statement runs (see the top of this file). A statement running meanwhile
// is not waited for: it arms the release again when it ends.
func (s *Session) ReleaseIdle(ctx context.Context) Released {
	var r Released
	select {
	case s.lock <- struct{}{}:
	default:
		return r
	}
	defer s.release() // not idleAfter: what is kept stays until the next statement
	// A held session (HoldWhileIdle) gives nothing back, even to a release
	// armed before the hold whose timer fired as the hold began.
	if s.closed || s.conn == nil || s.idle == 0 {
		return r
	}
	if s.inTx {
		dirty, err := s.dirty(ctx, s.conn)
		if err == nil && dirty {
			return r
		}
		if _, rerr := s.conn.ExecContext(ctx, "ROLLBACK"); rerr != nil || err != nil {
			// The connection is in an unknown state: give it up, as
			// closeConn would (the server side may need reaping). If the
			// transaction may have held writes (the server ended the
			// connection under them), the next statement or commit says
			// they are gone rather than run in a fresh transaction.
			s.lost = err != nil && !s.readOnly
			s.abandonConn()
			r.Transaction, r.Connection = true, true
			return r
		}
		s.inTx, r.Transaction = false, true
	}
	if cs, ok := s.eng.(ConnState); ok {
		if now, err := cs.ConnState(ctx, s.conn); err != nil || now != s.baseline {
			return r
		}
	}
	s.dropConn()
	r.Connection = true
	return r
}

// abandonConn closes a connection that could not be rolled back, ending its
// server side through the Reaper, and leaves the session open: the next
// statement connects afresh.
func (s *Session) abandonConn() {
	backend := s.backend
	s.dropConn()
	if r, ok := s.eng.(Reaper); ok && backend != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Reap(ctx, s.pool, backend) //nolint:errcheck // best effort, as in closeConn
	}
}

// HoldWhileIdle makes the session hold its transaction and connection
// while idle, until Close or HoldWhileIdle(false): a transaction handle's,
// which the client began and ends. HoldWhileIdle(false) gives it back to
// the idle release.
func (s *Session) HoldWhileIdle(hold bool) {
	s.lock <- struct{}{}
	if hold {
		s.idle = 0
		if s.idleTimer != nil {
			s.idleTimer.Stop()
		}
		s.release()
		return
	}
	s.idle = s.cfg.IdleRelease
	s.idleAfter()
}
