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
	sessions := make([]*session, 0, len(g.sessions))
	for _, ss := range g.sessions {
		sessions = append(sessions, ss)
	}
	perUser := 0
	for _, n := range g.perUser {
		perUser = max(perUser, n)
	}
	live := len(g.sessions) + len(g.workers)
	s.Limits = []Usage{
		{Key: "limits.max_sessions", Used: int64(live), Max: int64(g.opts.MaxSessions)},
		{Key: "limits.max_sessions_per_user", Used: int64(perUser), Max: int64(g.opts.MaxSessionsPerUser)},
	}
	if g.opts.DB.Max > 0 {
		s.Limits = append(s.Limits, Usage{Key: "limits.max_db_connections", Used: int64(g.dbUsed), Max: int64(g.opts.DB.Max)})
	}
	g.mu.Unlock()
	s.Limits = append(s.Limits, Usage{Key: "limits.max_user_buffer_bytes (all users)", Used: g.buffered.used.Load()})
	for _, ss := range sessions {
		readOnly, _ := ss.rights()
		s.Sessions = append(s.Sessions, Live{
			ID: ss.id, Kind: WorkerSession, User: ss.user, ClientID: ss.owner.ClientID, ReadOnly: readOnly,
			Pid: ss.worker().Pid(), LastCall: unixNano(ss.lastUsed.Load()), Busy: int(ss.busy.Load()),
		})
	}
	for _, uw := range g.readyWorkers() {
		s.Workers = append(s.Workers, Live{
			ID: uw.id, Kind: WorkerUser, User: uw.key.user, ReadOnly: uw.key.readOnly,
			Pid: uw.conn.Pid(), LastCall: unixNano(uw.lastUsed.Load()), Busy: int(uw.busy.Load()),
		})
	}
	for _, l := range [][]Live{s.Sessions, s.Workers} {
		sort.Slice(l, func(i, j int) bool { return l[i].User < l[j].User || l[i].User == l[j].User && l[i].ID < l[j].ID })
	}
	s.PoolHits, s.PoolMisses = g.launcher.PoolStats()
	return s
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
// id runs here.
func (g *Gateway) End(ctx context.Context, id string) (Live, bool) {
	g.mu.Lock()
	s := g.sessions[id]
	var uw *userWorker
	if s == nil {
		for _, w := range g.workers {
			if w.id == id {
				uw = w
				break
			}
		}
	}
	g.mu.Unlock()
	why := "gateway: an operator ended this worker"
	switch {
	case s != nil:
		readOnly, _ := s.rights()
		l := Live{ID: s.id, Kind: WorkerSession, User: s.user, ClientID: s.owner.ClientID, ReadOnly: readOnly, Pid: s.worker().Pid()}
		if err := g.endSessions(ctx, []*session{s}, ExitDeleted, why+"; initialize a new session"); err != nil {
			g.log.Warn("gateway: ending a session for an operator", "session", l.ShortID(), "err", err)
		}
		return l, true
	case uw != nil:
		select {
		case <-uw.ready:
			if uw.failed {
				return Live{}, false
			}
		default:
			return Live{}, false // still starting: nothing to end yet
		}
		l := Live{ID: uw.id, Kind: WorkerUser, User: uw.key.user, ReadOnly: uw.key.readOnly, Pid: uw.conn.Pid()}
		if err := g.stopWorkers(ctx, []*userWorker{uw}, ExitDeleted, why+"; send the request again"); err != nil {
			g.log.Warn("gateway: ending a per-user worker for an operator", "worker", l.ShortID(), "err", err)
		}
		return l, true
	}
	return Live{}, false
}
