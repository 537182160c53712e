package gateway

import (
	"context"
	"sort"
	"time"
)

// The operator view's read of the gateway (web/): what runs on this
// replica, and ending one worker. Nothing here changes how a request is
// served.

// Live is one running worker: a 2025 session's, or a 2026-07-28 per-user
// worker.
type Live struct {
	// ID is the session id, or the per-user worker's instance id: what
	// End takes. A session id is a credential of its owner's; show only
	// its start (ShortID).
	ID       string
	Kind     string // WorkerSession or WorkerUser
	User     string // the user id the worker runs as
	ClientID string // the session's client; "" for a per-user worker
	ReadOnly bool
	Pid      int
	LastCall time.Time // the last request's time; zero when none
	Busy     int       // HTTP requests being served
}

// ShortID is the ID's first 8 characters, as the log shows it.
func (l Live) ShortID() string {
	if len(l.ID) > 8 {
		return l.ID[:8]
	}
	return l.ID
}

// Usage is one limit in use against its maximum.
type Usage struct {
	Key       string // the configuration key of the maximum
	Used, Max int64  // Max 0: none
}

// Snapshot is the state of this gateway at one moment.
type Snapshot struct {
	Replica  string // Options.ReplicaID
	Taken    time.Time
	Sessions []Live
	Workers  []Live
	Starting int // sessions whose worker is starting
	Draining bool
	// PoolHits and PoolMisses count workers taken from the pool of
	// pre-started ones and started on demand.
	PoolHits, PoolMisses int64
	Limits               []Usage
}

// Snapshot returns what runs on this gateway, sorted by user.
func (g *Gateway) Snapshot() Snapshot {
	g.mu.Lock()
	s := Snapshot{Replica: g.opts.ReplicaID, Taken: g.opts.Now(), Starting: g.starting, Draining: g.draining}
	// The limits are counted by g.acct, with every gateway sharing it.
	live, perUser, dbUsed := g.acct.usage()
	s.Limits = []Usage{
		{Key: "limits.max_sessions", Used: int64(live), Max: int64(g.opts.MaxSessions)},
		{Key: "limits.max_sessions_per_user", Used: int64(perUser), Max: int64(g.opts.MaxSessionsPerUser)},
	}
	if g.opts.DB.Max > 0 {
		s.Limits = append(s.Limits, Usage{Key: "limits.max_db_connections", Used: int64(dbUsed), Max: int64(g.opts.DB.Max)})
	}
	g.mu.Unlock()
	s.Limits = append(s.Limits, Usage{Key: "limits.max_user_buffer_bytes (all users)", Used: g.acct.buffered.used.Load()})
	for _, b := range g.liveBindings(nil) {
		l := liveOf(b)
		l.LastCall, l.Busy = unixNano(b.lastUsed.Load()), int(b.busy.Load())
		if b.gen == sessionGen {
			s.Sessions = append(s.Sessions, l)
		} else {
			s.Workers = append(s.Workers, l)
		}
	}
	for _, l := range [][]Live{s.Sessions, s.Workers} {
		sort.Slice(l, func(i, j int) bool { return l[i].User < l[j].User || l[i].User == l[j].User && l[i].ID < l[j].ID })
	}
	s.PoolHits, s.PoolMisses = g.launcher.PoolStats()
	return s
}

// liveOf is what the operator view shows of binding b.
func liveOf(b *binding) Live {
	readOnly, _ := b.rights()
	l := Live{ID: b.id, Kind: b.gen.kind, User: b.key.user, ReadOnly: readOnly, Pid: b.worker().Pid()}
	if b.gen == sessionGen {
		l.ClientID = b.key.owner.ClientID
	}
	return l
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// End stops the worker of the session or per-user worker id, as a DELETE
// or the idle reaper would: its calls in flight get workerExited, its
// session is gone. It reports what it ended; false when nothing of that
// id runs here (or its worker is still starting: nothing to end yet).
func (g *Gateway) End(ctx context.Context, id string) (Live, bool) {
	var found *binding
	for _, b := range g.liveBindings(nil) {
		if b.id == id {
			found = b
			break
		}
	}
	if found == nil {
		return Live{}, false
	}
	l := liveOf(found)
	why := "gateway: an operator ended this worker"
	if found.gen == userGen {
		why += "; send the request again"
	}
	if err := g.stopBindings(ctx, []*binding{found}, ExitDeleted, why); err != nil {
		g.log.Warn("gateway: ending a worker for an operator", "kind", l.Kind, "id", l.ShortID(), "err", err)
	}
	return l, true
}
