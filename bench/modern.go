package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"

	"github.com/mcpgate/mcpgate/workerproto"
)

// The stateless phase: MCP 2026-07-28 clients, with no session, each on its
// own connections, calling in a closed loop as the sessions of the load
// phase do; all the clients of one user, or spread over several users
// (client i acts as user i mod users). It runs on the systems that serve
// 2026-07-28: mcpgate, whose requests of one user share that user's worker
// process, and the go-sdk server in its stateless mode.

// ModernResult is one closed loop of stateless 2026-07-28 clients.
// LoadResult.Sessions is the number of clients.
type ModernResult struct {
	LoadResult
	Users   int           `json:"users"`             // distinct users the clients act as
	Workers *WorkerCensus `json:"workers,omitempty"` // mcpgate: its per-user workers after the loop
	// Processes is how many processes the system ran right after the loop
	// (server and workers).
	Processes int `json:"processes,omitempty"`
}

// WorkerCensus is the per-user worker processes of a system (the built-in
// worker started with MCPGATE_WORKER_SCOPE=user) that serve a run's users,
// read from /proc right after the loop, while they wait out their idle
// timeout.
type WorkerCensus struct {
	Workers int    `json:"workers"` // processes
	Users   int    `json:"users"`   // distinct users among them (MCPGATE_WORKER_USER)
	Memory  Memory `json:"memory"`  // theirs together
	// PerUserRSS and PerUserPSS are Memory divided by Users: the memory
	// an active user costs in worker processes.
	PerUserRSS int64 `json:"per_user_rss_bytes"`
	PerUserPSS int64 `json:"per_user_pss_bytes"`
}

// CensusUserWorkers finds, among pids, the per-user workers of users (any
// user's when users holds ""), and their memory. A per-user worker is one
// whose environment says so, or one that logged names (pid → user, from
// the gateway's log: a pre-started worker gets its identity on stdin, so
// its environment does not say). A process whose environment cannot be
// read (it exited, or is another user's) and that logged does not name is
// not one.
func (p ProcFS) CensusUserWorkers(pids []int, users []string, logged map[int]string) (WorkerCensus, error) {
	var found []int
	seen := make(map[string]bool)
	anyUser := slices.Contains(users, "")
	for _, pid := range pids {
		u, ok := logged[pid]
		if !ok {
			env, err := p.Environ(pid)
			if err != nil || env[workerproto.EnvScope] != workerproto.ScopeUser {
				continue
			}
			u = env[workerproto.EnvUser]
		}
		if !anyUser && !slices.Contains(users, u) {
			continue
		}
		found = append(found, pid)
		seen[u] = true
	}
	c := WorkerCensus{Workers: len(found), Users: len(seen)}
	if len(found) == 0 {
		return c, nil
	}
	m, err := p.Memory(found)
	if err != nil {
		return c, err
	}
	c.Memory = m
	c.PerUserRSS = m.RSS / int64(c.Users)
	c.PerUserPSS = m.PSS / int64(c.Users)
	return c, nil
}

// modernTarget is a system that serves MCP 2026-07-28.
type modernTarget interface {
	target
	// openModern starts a stateless client acting as modernUsers()[u].
	openModern(ctx context.Context, u int) (*session, error)
	// modernUsers names the users clients can act as ("": one user the
	// harness does not name, such as the localhost mode's).
	modernUsers() []string
}

// modernUsersOf returns the users a run of users users acts as, or nil
// when the system cannot act as that many.
func modernUsersOf(t modernTarget, users int) []string {
	all := t.modernUsers()
	if users < 1 || users > len(all) {
		return nil
	}
	return all[:users]
}

// startModern opens n stateless clients spread over users users.
func (b *bench) startModern(ctx context.Context, t modernTarget, tool Tool, n, users int) *loadRun {
	profiled := tool
	profiled.Label = fmt.Sprintf("%s-mcp2026-users%d", tool.Label, users) // apart from the sessions' loop of n
	return b.startLoadWith(ctx, tool, n, func(ctx context.Context, i int) (*session, error) {
		return t.openModern(ctx, i%users)
	}, profiled)
}

// finishModern closes the clients, summarises the loop and, on a system
// with per-user workers, counts those of the run's users.
func (b *bench) finishModern(lr *loadRun, t modernTarget, users int, census bool) ModernResult {
	res := ModernResult{LoadResult: b.finishLoad(lr), Users: users}
	pids, err := b.t.pids()
	res.Processes = len(pids)
	if !census {
		return res
	}
	if err == nil {
		var c WorkerCensus
		var logged map[int]string
		if lt, ok := t.(interface {
			loggedUserWorkers() (map[int]string, error)
		}); ok {
			logged, err = lt.loggedUserWorkers()
		}
		if err == nil {
			c, err = b.proc().CensusUserWorkers(pids, modernUsersOf(t, users), logged)
		}
		if err == nil {
			res.Workers = &c
		}
	}
	if err != nil && res.FirstError == "" {
		res.FirstError = "worker census: " + err.Error()
	}
	return res
}

// perUserStarted matches the gateway's log line for a per-user worker's
// start (gateway/pool.go), in slog's text format: its user and pid.
var (
	perUserStarted = regexp.MustCompile(`msg="gateway: per-user worker started"`)
	logUser        = regexp.MustCompile(` user=("(?:[^"\\]|\\.)*"|[^ ]*)`)
	logPid         = regexp.MustCompile(` pid=([0-9]+)`)
)

// parseUserWorkerLog returns pid → user of every per-user worker start
// logged in log.
func parseUserWorkerLog(log []byte) map[int]string {
	out := make(map[int]string)
	for _, line := range bytes.Split(log, []byte("\n")) {
		if !perUserStarted.Match(line) {
			continue
		}
		u, pm := logUser.FindSubmatch(line), logPid.FindSubmatch(line)
		if u == nil || pm == nil {
			continue
		}
		pid, err := strconv.Atoi(string(pm[1]))
		if err != nil {
			continue
		}
		user := string(u[1])
		if uq, err := strconv.Unquote(user); err == nil {
			user = uq
		}
		out[pid] = user
	}
	return out
}

// loggedUserWorkers reads the per-user worker starts from the system's
// logs (pid → user).
func (t *httpTarget) loggedUserWorkers() (map[int]string, error) {
	out := make(map[int]string)
	for _, p := range t.procs {
		data, err := os.ReadFile(p.log.Name())
		if err != nil {
			return nil, err
		}
		for pid, u := range parseUserWorkerLog(data) {
			out[pid] = u
		}
	}
	return out, nil
}
