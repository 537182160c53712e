package gateway

import (
	"sync"

	"github.com/mcpgate/mcpgate/auth"
)

// Accounting counts what the process-wide limits bound: the live and
// starting bindings (Options.MaxSessions), each principal's
// (MaxSessionsPerUser), the database connections their workers may hold
// (DB), and the bytes held for clients not reading (MaxUserBufferBytes and
// the total of BufferedBytes). A Gateway has its own unless
// Options.Accounting gives one: several gateways of one process (one per
// MCP server behind it) that share it share one set of limits, each
// gateway checking them with its own Options (give every one the same
// limits).
type Accounting struct {
	mu        sync.Mutex
	live      int                       // bindings, live and starting, of every gateway
	perUser   map[auth.PrincipalKey]int // the same, per principal
	dbUsed    int                       // database connections the workers may hold
	dbPerUser map[auth.PrincipalKey]int // the same, per principal
	userBufs  map[auth.PrincipalKey]*budget
	buffered  *budget // bytes held for every client
}

// NewAccounting returns an Accounting with nothing counted.
func NewAccounting() *Accounting {
	return &Accounting{
		perUser:   make(map[auth.PrincipalKey]int),
		dbPerUser: make(map[auth.PrincipalKey]int),
		userBufs:  make(map[auth.PrincipalKey]*budget),
		buffered:  newBudget("every client", "", 0, nil),
	}
}

// take admits one more binding of gen for who under o's limits, with n
// database connections, or says which limit refuses it. On success who is
// charged and has a buffer budget (userBuf).
func (a *Accounting) take(who auth.PrincipalKey, n int, o *Options, gen *generation) (failure, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.countableLocked(who, o, gen); !ok {
		return f, false
	}
	if f, ok := a.dbTakeLocked(who, n, o.DB); !ok {
		return f, false
	}
	a.joinLocked(who, o)
	return failure{}, true
}

// takeDB charges who n database connections alone: a worker its sessions
// started holds them before it counts as a binding (count).
func (a *Accounting) takeDB(who auth.PrincipalKey, n int, b DBBudget) (failure, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dbTakeLocked(who, n, b)
}

// count admits one more binding of gen for who under o's limits, without
// database connections, and counts it.
func (a *Accounting) count(who auth.PrincipalKey, o *Options, gen *generation) (failure, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.countableLocked(who, o, gen); !ok {
		return f, false
	}
	a.joinLocked(who, o)
	return failure{}, true
}

// countableLocked says whether one more binding of who stays under
// MaxSessions and MaxSessionsPerUser. a.mu is held.
func (a *Accounting) countableLocked(who auth.PrincipalKey, o *Options, gen *generation) (failure, bool) {
	switch {
	case a.live >= o.MaxSessions:
		return gen.tooMany, false
	case a.perUser[who] >= o.MaxSessionsPerUser:
		return gen.tooManyForUser, false
	}
	return failure{}, true
}

// dbTakeLocked charges who n connections under budget b. a.mu is held.
func (a *Accounting) dbTakeLocked(who auth.PrincipalKey, n int, b DBBudget) (failure, bool) {
	if b.Max <= 0 {
		return failure{}, true
	}
	switch {
	case a.dbPerUser[who]+n > b.MaxPerUser:
		return errDBForUser, false
	case a.dbUsed+n > b.Max:
		return errDBFull, false
	}
	a.dbUsed += n
	a.dbPerUser[who] += n
	return failure{}, true
}

// joinLocked counts one more binding of who, giving who a buffer budget
// on its first. a.mu is held.
func (a *Accounting) joinLocked(who auth.PrincipalKey, o *Options) {
	a.live++
	if a.perUser[who]++; a.userBufs[who] == nil {
		a.userBufs[who] = newBudget("one user's responses", "limits.max_user_buffer_bytes", o.MaxUserBufferBytes, a.buffered)
	}
}

// parentBuf is the budget a binding of who not yet counted draws on: who's
// own if who has one, else the total.
func (a *Accounting) parentBuf(who auth.PrincipalKey) *budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.userBufs[who]; b != nil {
		return b
	}
	return a.buffered
}

// userBuf is who's buffer budget; take made it.
func (a *Accounting) userBuf(who auth.PrincipalKey) *budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.userBufs[who]
}

// leave counts one binding of who gone; the last one takes the
// principal's buffer budget with it (a response still writing gives back
// to the budget it holds, and so to the total).
func (a *Accounting) leave(who auth.PrincipalKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live--
	if a.perUser[who]--; a.perUser[who] <= 0 {
		delete(a.perUser, who)
		delete(a.userBufs, who)
	}
}

// dbGive gives back n connections take charged to who under budget b.
func (a *Accounting) dbGive(who auth.PrincipalKey, n int, b DBBudget) {
	if b.Max <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dbUsed -= n
	if a.dbPerUser[who] -= n; a.dbPerUser[who] <= 0 {
		delete(a.dbPerUser, who)
	}
}

// usage is what the operator view shows of the counts: the bindings, the
// most any principal holds, and the database connections.
func (a *Accounting) usage() (live, maxPerUser, db int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range a.perUser {
		maxPerUser = max(maxPerUser, n)
	}
	return a.live, maxPerUser, a.dbUsed
}
