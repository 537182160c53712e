package tools

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// Transaction handle kinds: a handle that names no open transaction of this
// worker gets one of these, with a message that says to call begin.
const (
	// KindHandleUnknown: the handle is malformed, was never minted by this
	// worker (forged), or its transaction was committed or aborted.
	KindHandleUnknown Kind = "handleUnknown"
	// KindHandleExpired: the handle's transaction sat idle past the
	// worker's transaction idle timeout and was rolled back.
	KindHandleExpired Kind = "handleExpired"
	// KindHandleForeign: the handle was minted by another worker instance:
	// one that has stopped (idle, crash, gateway restart), another
	// user's or read-only flag's worker, or one on another gateway replica.
	KindHandleForeign Kind = "handleForeign"
	// KindHandleLimit: the worker already holds its most open transactions.
	KindHandleLimit Kind = "handleLimit"
)

// handleParam is the argument that names a transaction in a per-user
// worker. MCP 2026-07-28 §Tools x-mcp-header (SEP-2243): clients mirror it
// into an Mcp-Param-Transaction header, so a load balancer can route a
// call to the replica holding its transaction without reading the body.
var handleParam = Param{
	Name:        "transaction",
	Type:        String,
	Header:      "Transaction",
	Description: "A transaction handle from begin: run in that transaction. Without it the call runs in a transaction of its own (a write commits when the call succeeds).",
}

// handlePrefix starts every handle; the rest is the worker instance id and
// 128 random bits: txn.<instance>.<secret>.
const handlePrefix = "txn"

// instancePattern is what a worker instance id may hold to be embedded in
// a handle (the gateway's are "u-" and hex).
var instancePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// secretPattern is a handle's random part: 16 bytes, base64url.
var secretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// TransactionOptions configure a per-user worker's transactions.
type TransactionOptions struct {
	// Instance is the worker instance id (MCPGATE_WORKER_SESSION_ID), put
	// into every handle so that a handle of another instance is told apart
	// from a forged one. It must match [A-Za-z0-9_-]{1,128}.
	Instance string

	// Open connects a new database session as the worker's user, with the
	// worker's read-only flag; each handle and each handle-less call gets
	// one.
	Open func(ctx context.Context) (*db.Session, error)

	// Max bounds the open handles; 0 means db.DefaultMaxTransactions.
	Max int

	// IdleTimeout rolls back a handle's transaction after this long
	// without a call; 0 means db.DefaultTransactionIdleTimeout.
	IdleTimeout time.Duration

	// MaxIdle bounds the connections kept for handle-less calls; 0 means 4.
	// A kept one still closes its server connection when idle
	// (db.Config.IdleRelease).
	MaxIdle int

	// Now is the clock; time.Now by default.
	Now func() time.Time
}

// Transactions are a per-user worker's database transactions (MCP
// 2026-07-28 has no sessions; state across calls travels in server-minted
// handles, per the revision's changelog). begin mints a handle bound to its own
// connection and transaction; a call that names it runs there, and commit
// or abort ends it. A call without a handle runs in a transaction of its
// own on a connection taken from a small idle pool. The worker is keyed by
// (user, read-only flag), so its handles are bound to both, and to the
// worker itself through the instance id they embed.
type Transactions struct {
	opts   TransactionOptions
	engine string

	mu      sync.Mutex
	live    map[string]*txn
	ended   map[string]endReason // recently ended handles and why, for the error
	idle    []*db.Session        // connections for handle-less calls
	open    int                  // sessions of this worker, open or idle: at most Max+1 (db.ConnectionsPerUserWorker)
	changed chan struct{}        // closed and replaced when a session comes back or closes
	timer   *time.Timer
	closed  bool
}

// endReason says why a handle ended.
type endReason int

const (
	endedUnknown  endReason = iota // no record: never minted, or long ago
	endedByClient                  // commit or abort
	endedExpired                   // idle past the timeout
	endedClosed                    // its connection was closed (a failed security check)
)

// txn is one open handle.
type txn struct {
	s      *db.Session
	holder string        // the key that began it (workerproto.MetaHolder)
	lock   chan struct{} // held by the call running on it
	last   time.Time     // end of the last call on it, or its begin
	busy   int           // calls running or waiting on it
	ended  bool          // committed or aborted
}

// NewTransactions opens the first connection (so that a bad database
// setting fails the worker's start, as a session worker's does) and keeps
// it for handle-less calls.
func NewTransactions(ctx context.Context, opts TransactionOptions) (*Transactions, error) {
	if !instancePattern.MatchString(opts.Instance) {
		return nil, fmt.Errorf("tools: worker instance id %q cannot go into a transaction handle (want 1 to 128 of A-Z a-z 0-9 _ -)", opts.Instance)
	}
	if opts.Max <= 0 {
		opts.Max = db.DefaultMaxTransactions
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = db.DefaultTransactionIdleTimeout
	}
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s, err := opts.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &Transactions{opts: opts, engine: s.Engine(), live: map[string]*txn{}, ended: map[string]endReason{}, idle: []*db.Session{s}, open: 1, changed: make(chan struct{})}, nil
}

// session returns a session for a handle or a handle-less call: an idle
// one, or a new one while the worker has fewer than Max+1, so that the
// gateway's connection budget (db.ConnectionsPerUserWorker) holds however
// many calls run at once; else it waits for one to come back, until ctx
// ends.
func (x *Transactions) session(ctx context.Context) (*db.Session, error) {
	for {
		x.mu.Lock()
		if n := len(x.idle); n > 0 {
			s := x.idle[n-1]
			x.idle = x.idle[:n-1]
			x.mu.Unlock()
			return s, nil
		}
		if x.open < x.opts.Max+1 {
			x.open++
			x.mu.Unlock()
			s, err := x.opts.Open(ctx)
			if err != nil {
				x.gone()
			}
			return s, err
		}
		changed := x.changed
		x.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, Errorf(KindOther, "all %d database connections of this worker are in use by open transactions and calls in flight; commit or abort a transaction, or try again when a call has ended", x.opts.Max+1)
		}
	}
}

// gone counts one session closed.
func (x *Transactions) gone() {
	x.mu.Lock()
	x.open--
	x.changedLocked()
	x.mu.Unlock()
}

func (x *Transactions) changedLocked() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// Engine returns the database engine's name.
func (x *Transactions) Engine() string { return x.engine }

// Close rolls back every open transaction and closes every connection.
func (x *Transactions) Close() error {
	x.mu.Lock()
	x.closed = true
	if x.timer != nil {
		x.timer.Stop()
	}
	var all []*db.Session
	for h, t := range x.live {
		all = append(all, t.s)
		delete(x.live, h)
	}
	all = append(all, x.idle...)
	x.idle = nil
	x.mu.Unlock()
	for _, s := range all {
		s.Close() //nolint:errcheck // closing rolls back; nothing to report to anyone
	}
	return nil
}

// Begin mints a handle with a new connection and transaction, bound to
// holder: the key the request proved (workerproto.MetaHolder), "" for none.
func (x *Transactions) Begin(ctx context.Context, holder string) (string, error) {
	x.sweep()
	x.mu.Lock()
	full := len(x.live) >= x.opts.Max
	x.mu.Unlock()
	if full {
		return "", x.limitError()
	}
	secret := make([]byte, 16)
	rand.Read(secret) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24)
	h := handlePrefix + "." + x.opts.Instance + "." + base64.RawURLEncoding.EncodeToString(secret)
	s, err := x.session(ctx)
	if err != nil {
		return "", err
	}
	s.HoldWhileIdle(true) // the client's transaction: it ends it, or the idle timeout does
	x.mu.Lock()
	if x.closed || len(x.live) >= x.opts.Max { // stopping, or another begin won the last place
		closed := x.closed
		x.mu.Unlock()
		x.put(s)
		if closed {
			return "", Errorf(KindOther, "the worker is stopping; call begin again")
		}
		return "", x.limitError()
	}
	x.live[h] = &txn{s: s, holder: holder, lock: make(chan struct{}, 1), last: x.opts.Now()}
	x.scheduleLocked()
	x.mu.Unlock()
	return h, nil
}

func (x *Transactions) limitError() error {
	return Errorf(KindHandleLimit, "this worker already holds %d open transactions, the most it allows: commit or abort one (an idle one is rolled back after %s), or call without a transaction handle", x.opts.Max, x.opts.IdleTimeout)
}

// acquire returns handle h's open transaction for one call, holding it
// until release: calls on one handle run one at a time, so that commit or
// abort cannot end a transaction under a call that waited for it. A handle
// that names no open transaction gets an error whose kind says why; one
// that another holder began is answered as one never minted, so that a
// call proving another key learns nothing of it.
func (x *Transactions) acquire(ctx context.Context, h, holder string) (*txn, error) {
	x.sweep()
	x.mu.Lock()
	t, ok := x.live[h]
	if ok && t.holder != holder {
		x.mu.Unlock()
		return nil, neverMinted()
	}
	if !ok {
		err := x.handleError(h)
		x.mu.Unlock()
		return nil, err
	}
	t.busy++
	x.mu.Unlock()
	select {
	case t.lock <- struct{}{}:
	case <-ctx.Done():
		x.mu.Lock()
		t.busy--
		dispose := t.ended && t.busy == 0
		x.mu.Unlock()
		if dispose {
			x.put(t.s)
		}
		return nil, Errorf(KindOther, "gave up waiting for the transaction's previous call: %v", ctx.Err())
	}
	if t.ended { // committed or aborted by the call before this one
		x.release(t)
		x.mu.Lock()
		defer x.mu.Unlock()
		return nil, x.handleError(h)
	}
	return t, nil
}

// handleAgain is what every handle error advises.
const handleAgain = "call begin for a new transaction, or call without a transaction handle to run in a transaction of its own"

// handleError explains why h names no open transaction.
func (x *Transactions) handleError(h string) error {
	const again = handleAgain
	parts := strings.Split(h, ".")
	if len(parts) != 3 || parts[0] != handlePrefix || !instancePattern.MatchString(parts[1]) || !secretPattern.MatchString(parts[2]) {
		return Errorf(KindHandleUnknown, "%q is not a transaction handle: pass the transaction value begin returned, or %s", clip(h, 64), again)
	}
	if from, here := workerproto.ReplicaOf(parts[1]), workerproto.ReplicaOf(x.opts.Instance); from != here {
		// A request the load balancer should have sent to the replica in
		// the handle's Mcp-Param-Transaction header (x-mcp-header).
		return Errorf(KindHandleForeign, "the transaction handle was minted on gateway replica %q and this is replica %q: send the handle's calls with the Mcp-Param-Transaction header so the load balancer routes them to its replica (if that replica has stopped, its transaction and uncommitted changes are gone): %s", clip(from, 64), here, again)
	}
	if parts[1] != x.opts.Instance {
		return Errorf(KindHandleForeign, "the transaction handle belongs to another worker: the one that minted it has stopped (idle, restarted or crashed), serves another user or read-only flag, or runs on another gateway replica; its transaction and uncommitted changes are gone here: %s", again)
	}
	switch x.ended[h] {
	case endedExpired:
		return Errorf(KindHandleExpired, "the transaction sat idle longer than %s and was rolled back (its uncommitted changes are lost): %s", x.opts.IdleTimeout, again)
	case endedByClient:
		return Errorf(KindHandleUnknown, "that transaction has already ended (committed or aborted): %s", again)
	case endedClosed:
		return Errorf(KindHandleUnknown, "that transaction was rolled back and its connection closed after a failed check (its uncommitted changes are lost): %s", again)
	}
	return neverMinted()
}

// neverMinted is the error for a well-formed handle of this worker that
// names no transaction of the caller's.
func neverMinted() error {
	return Errorf(KindHandleUnknown, "no transaction of this worker has that handle (it was never minted here): %s", handleAgain)
}

// release ends a call on t. The last call on an ended handle gives its
// connection, which holds a fresh transaction, to handle-less calls. A
// handle whose connection the call closed (a failed security check) ends.
func (x *Transactions) release(t *txn) {
	closed := t.s.Closed()
	x.mu.Lock()
	if closed && !t.ended {
		t.ended = true
		for h, lt := range x.live {
			if lt == t {
				delete(x.live, h)
				x.tombstoneLocked(h, endedClosed)
			}
		}
	}
	t.busy--
	t.last = x.opts.Now()
	dispose := t.ended && t.busy == 0
	if !t.ended {
		x.scheduleLocked()
	}
	x.mu.Unlock()
	<-t.lock
	if dispose {
		x.put(t.s)
	}
}

// end ends handle h after commit or abort, from a call that holds it.
func (x *Transactions) end(h string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t, ok := x.live[h]; ok {
		t.ended = true
		delete(x.live, h)
		x.tombstoneLocked(h, endedByClient)
	}
}

// tombstoneLocked remembers why h ended, for a clearer error; the record
// is bounded, so a very old handle gets the plainer "never minted" text.
func (x *Transactions) tombstoneLocked(h string, why endReason) {
	if len(x.ended) >= 64*x.opts.Max {
		for k := range x.ended {
			delete(x.ended, k)
			break
		}
	}
	x.ended[h] = why
}

// sweep rolls back every handle idle past the timeout.
func (x *Transactions) sweep() {
	now := x.opts.Now()
	var stale []*db.Session
	x.mu.Lock()
	for h, t := range x.live {
		if t.busy == 0 && now.Sub(t.last) >= x.opts.IdleTimeout {
			stale = append(stale, t.s)
			delete(x.live, h)
			x.tombstoneLocked(h, endedExpired)
		}
	}
	x.mu.Unlock()
	for _, s := range stale {
		s.Close() //nolint:errcheck // closing rolls back
		x.gone()
	}
}

// scheduleLocked arms the timer for the next expiry, so that an abandoned
// transaction releases its locks and snapshot without waiting for a call.
func (x *Transactions) scheduleLocked() {
	if x.closed || len(x.live) == 0 {
		return
	}
	var first time.Time
	for _, t := range x.live {
		if first.IsZero() || t.last.Before(first) {
			first = t.last
		}
	}
	d := max(first.Add(x.opts.IdleTimeout).Sub(x.opts.Now()), time.Second)
	if x.timer == nil {
		x.timer = time.AfterFunc(d, x.expire)
		return
	}
	x.timer.Reset(d)
}

func (x *Transactions) expire() {
	x.sweep()
	x.mu.Lock()
	x.scheduleLocked()
	x.mu.Unlock()
}

// take returns a connection for one handle-less call, in a fresh
// transaction, so that the call sees every commit made before it. It
// sweeps first, so that an abandoned handle's locks never outlive its
// timeout in front of the call.
func (x *Transactions) take(ctx context.Context) (*db.Session, error) {
	x.sweep()
	return x.session(ctx)
}

// put ends a handle-less call, or the last call of an ended handle: its
// session rolls back whatever is left, so that no transaction waits in the
// idle pool, and goes back there, or is closed when the pool is full. A
// connection not as Open made it is closed too (db.Session.Reusable): one
// that committed, since what a statement set on it (TEMP tables, WITH HOLD
// cursors, search_path, statement_timeout) outlives the commit, and one
// holding what outlives a rollback (a PostgreSQL prepared statement, a
// SQLite setting such as case_sensitive_like). The user's next call must
// start from the connection Open makes (on SQLite, which has no DISCARD
// ALL, closing is the only reset).
func (x *Transactions) put(s *db.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.HoldWhileIdle(false)
	closed := !s.Reusable(ctx)
	x.mu.Lock()
	keep := !closed && !x.closed && len(x.idle) < x.opts.MaxIdle
	if keep {
		x.idle = append(x.idle, s)
		x.changedLocked()
	}
	x.mu.Unlock()
	if !keep {
		s.Close() //nolint:errcheck // closing rolls back
		x.gone()
	}
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
