package db

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
	defer s.idleAfter()
	if err := s.ready(ctx); err != nil {
		return err
	}
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
		// Without its mark the transaction cannot be checked: not one to
		// run statements in.
		s.conn.ExecContext(ctx, "ROLLBACK") //nolint:errcheck // the caller gives the connection up
		return fmt.Errorf("db: begin a transaction: %w", err)
	}
	s.inTx, s.mark, s.began = true, mark, s.Now()
	return nil
}

// dirty reports whether the transaction has uncommitted changes. A
// read-only session has none, whatever the engine's sign of a write says
// (PostgreSQL's: a transaction id, which pg_current_xact_id() takes too),
// and neither has a session with no transaction open.
func (s *Session) dirty(ctx context.Context, q Querier) (bool, error) {
	if s.readOnly || !s.inTx {
		return false, nil
	}
	return s.eng.Dirty(ctx, q, s.mark)
}

// Commit commits the transaction; the next statement begins the next one.
// With no transaction open there is nothing to commit.
func (s *Session) Commit(ctx context.Context) error {
	return s.end(ctx, "COMMIT")
}

// Abort discards the transaction's changes; the next statement begins
// afresh.
func (s *Session) Abort(ctx context.Context) error {
	return s.end(ctx, "ROLLBACK")
}

// Refresh ends the transaction so that the session's next statement sees
// what other sessions have committed. It refuses, with kind conflict, when
// the transaction has uncommitted changes.
func (s *Session) Refresh(ctx context.Context) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.idleAfter()
	if !s.inTx {
		return nil // the next statement's transaction sees every commit
	}
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
	defer s.idleAfter()
	return s.restart(ctx, stmt)
}

// restart ends the transaction with stmt (COMMIT or ROLLBACK); the next
// statement begins the next one. A failed COMMIT has rolled back; the
// session still goes on.
func (s *Session) restart(ctx context.Context, stmt string) error {
	if !s.inTx {
		if s.lost && stmt == "COMMIT" {
			s.lost = false
			return errLost
		}
		s.lost = false // an abort or refresh discards what was lost anyway
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StatementTimeout)
	defer cancel()
	_, err := s.conn.ExecContext(sctx, stmt)
	if err != nil {
		e := classify(s.eng, sctx, err)
		return s.fail(e)
	}
	s.committed = s.committed || stmt == "COMMIT"
	s.inTx = false
	return nil
}

// Committed reports whether the session has committed a transaction.
// Connection state a statement sets (a TEMP table, a WITH HOLD cursor, a
// SET) outlives a commit, where a rollback undoes it, so a connection that
// has committed is not as Open left it.
func (s *Session) Committed() bool {
	s.lock <- struct{}{}
	defer s.release()
	return s.committed
}

// Reusable ends the transaction, as Abort does, and reports whether the
// session's connection is still as connect left it, so that another call
// may take it: the session is not closed, committed nothing on this
// connection (what a statement set outlives a commit), and holds no state
// that outlived the rollback (ConnState: a PostgreSQL prepared statement,
// a SQLite connection setting). A session whose connection the idle
// release gave back is reusable: its next statement connects afresh.
func (s *Session) Reusable(ctx context.Context) bool {
	if err := s.acquire(ctx); err != nil {
		return false
	}
	defer s.idleAfter()
	if s.committed || s.restart(ctx, "ROLLBACK") != nil || s.closed {
		return false
	}
	if s.conn == nil {
		return true
	}
	if cs, ok := s.eng.(ConnState); ok {
		now, err := cs.ConnState(ctx, s.conn)
		return err == nil && now == s.baseline
	}
	return true
}

// CommitAfter runs fn as Do does and commits when it succeeds, as one step
// that no other statement of the session can come between. The mutation
// tools use it: each commits, so that no schema change holds its locks
// in an open transaction.
func (s *Session) CommitAfter(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.idleAfter()
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.do(ctx, fn); err != nil {
		return err
	}
	return s.restart(ctx, "COMMIT")
}

// Read runs fn as Do does, then always rolls its savepoint back, so that
// whatever fn's statement did is undone even in a read-write session. The
// query tool and the checks use it.
func (s *Session) Read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.idleAfter()
	if err := s.ready(ctx); err != nil {
		return err
	}
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
