package gateway

import (
	"fmt"
	"net/http"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// DBBudget bounds the database connections this gateway's workers may
// hold, so that one user's sessions cannot take every connection the
// database server has (PostgreSQL's max_connections) from everyone, on
// every replica. The gateway counts what a worker may hold, not what it
// holds at the moment: a session's worker from its start until its process
// has exited (a worker being stopped may still hold its connection), a
// per-user worker likewise. That is sound without asking the worker
// anything, and it is near what a worker holds when busy; an idle
// built-in worker closes its connection (database.idle_release), so that
// the server holds less than the budget, never more.
//
// The zero value is no budget: a worker without a database, or an
// external one, whose database is its own business.
type DBBudget struct {
	// Max bounds the connections of all this gateway's workers together;
	// 0 means no budget. Beyond it a new session (initialize) or per-user
	// worker gets 503.
	Max int
	// MaxPerUser bounds the connections of one principal's (issuer and
	// subject) workers on this gateway, whatever the user id, client or
	// rights; beyond it a new session or per-user worker of that principal
	// gets 429, as MaxSessionsPerUser's does. 0 means Max.
	MaxPerUser int
	// PerSession is the connections one session's worker may hold
	// (the built-in worker: 1); 0 means 1.
	PerSession int
	// PerUserWorker is the connections one 2026-07-28 per-user worker may
	// hold (the built-in worker: db.ConnectionsPerUserWorker); 0 means 1.
	PerUserWorker int
}

// CheckDBBudget reports a budget under which a worker could never start:
// the connections of one worker above what one principal may hold.
func CheckDBBudget(b DBBudget) error {
	b = b.withDefaults()
	if b.Max <= 0 {
		return nil
	}
	if b.MaxPerUser > b.Max {
		return fmt.Errorf("gateway: one user's database connections (%d) are more than all of them (%d)", b.MaxPerUser, b.Max)
	}
	if n := max(b.PerSession, b.PerUserWorker); n > b.MaxPerUser {
		return fmt.Errorf("gateway: one user's database connections (%d) are fewer than one worker may hold (%d), so that worker could never start", b.MaxPerUser, n)
	}
	return nil
}

func (b DBBudget) withDefaults() DBBudget {
	if b.MaxPerUser <= 0 {
		b.MaxPerUser = b.Max
	}
	if b.PerSession <= 0 {
		b.PerSession = 1
	}
	if b.PerUserWorker <= 0 {
		b.PerUserWorker = 1
	}
	return b
}

// principalOf is whom the per-user limits count against: the token's
// issuer and subject, so that one principal cannot spread its sessions
// over user ids or clients, nor two subjects share one user id's quota; in
// localhost mode, which has no token, the local user.
func principalOf(o auth.Owner, user string) auth.PrincipalKey {
	if o.Issuer == "" && o.Subject == "" {
		return auth.PrincipalKey{Subject: user}
	}
	return o.Key()
}

// The budget's refusals. A principal over its share gets the 429 of the
// other per-user limits; the gateway out of connections, the 503 of
// MaxSessions.
var (
	errDBForUser = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: this user's sessions and workers hold as many database connections as one user may (limits.max_db_connections_per_user); end a session (DELETE) or wait for idle ones to expire", nil}
	errDBFull    = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: every database connection this gateway may use is taken (limits.max_db_connections); try again later", nil}
)

// dbGiveLocked gives back the n connections admitLocked took for p.
// g.mu is held.
func (g *Gateway) dbGiveLocked(p auth.PrincipalKey, n int) {
	g.acct.dbGive(p, n, g.opts.DB)
}

// DBConnections returns the database connections this gateway's workers
// (and those of every gateway sharing its Options.Accounting) may hold
// now, by the budget's count (0 without a budget).
func (g *Gateway) DBConnections() int {
	_, _, db := g.acct.usage()
	return db
}
