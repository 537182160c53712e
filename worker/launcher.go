package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/workerproto"
)

// baseEnv names the only variables a worker inherits from the gateway; the
// gateway's environment may hold secrets.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ"}

// ErrIdentityEnv is returned by NewLauncher when the environment it is given
// sets a variable of the identity contract (workerproto.EnvUser and the rest): a
// worker's identity comes from the gateway alone, so that, say, an
// operator's MCPGATE_WORKER_READ_ONLY=false cannot turn a read-only session
// read-write.
var ErrIdentityEnv = errors.New("worker: the worker environment must not set an identity variable")

// LauncherOptions configure a Launcher. The zero value starts a worker with
// the base variables (PATH, HOME, LANG, TZ) and its identity only.
type LauncherOptions struct {
	// Env adds NAME=value pairs to every worker's environment (worker.env,
	// the built-in worker's database settings). It must not set an
	// identity variable (ErrIdentityEnv).
	Env []string
	// Dir is the worker's working directory; empty means the gateway's.
	Dir string
	// Toolsets names the built-in toolsets a worker registers; empty means
	// every one. Passed in the identity.
	Toolsets []string
	// ServerName, ServerVersion and ServerTitle are the serverInfo handed
	// to a worker in its identity. Name and version default to "mcpgate"
	// and "dev".
	ServerName, ServerVersion, ServerTitle string
	// StopGrace is the time between SIGTERM and SIGKILL (default 5s).
	StopGrace time.Duration
	// SendTimeout bounds one write to a worker's stdin (default 30s); see
	// ProcessConfig.SendTimeout.
	SendTimeout time.Duration
	// Limits bound each worker (worker.limits.*); LimitHelper applies
	// the rlimits (ProcessConfig.LimitHelper) and Cgroup holds the
	// per-worker leaves (nil: none, and the cgroup controls are skipped).
	Limits      Limits
	LimitHelper []string
	Cgroup      *Cgroup
	// Confine starts every worker through LimitHelper even without an
	// rlimit: the helper's own arguments then confine the worker (the
	// sandbox of an external command). See ProcessConfig.Confine.
	Confine bool
	// MaxMessageBytes bounds one message a worker writes (0:
	// DefaultMaxLineBytes); an answer over it fails its request alone
	// (KindTooLarge). See ProcessConfig.MaxLineBytes.
	MaxMessageBytes int
	// LookupEnv reads the gateway's environment, for the base variables;
	// nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)

	// IdentityOnStdin says that the command takes its identity as the
	// first line on stdin when started with workerproto.EnvPrestarted (the
	// built-in worker does; an external one must say so,
	// worker.identity_on_stdin). Without it PoolSize is ignored.
	IdentityOnStdin bool
	// PoolSize is how many workers the launcher keeps started ahead of
	// need once StartPool is called (worker.pool_size); 0 means none, and
	// every worker starts when its session does.
	PoolSize int
	// Logger receives the pool's own events and the stderr of a worker
	// not yet claimed; nil means slog.Default().
	Logger *slog.Logger

	// Accounts, when set, maps each session's user id to the OS account
	// its worker runs as (worker.run_as other than gateway); nil means
	// the gateway's own. It turns the pool off: a pre-started worker
	// runs as no one in particular, and must never serve a user before
	// it runs as that user.
	Accounts *Accounts
}

// Launcher starts worker processes, one per identity: cmd/mcpgate builds it
// from the configuration and the gateway asks it for each session's worker.
// It is the only place that decides what a worker's environment holds.
type Launcher struct {
	command []string
	opts    LauncherOptions
	base    []string // the base variables, NAME=value
	pool    *pool    // nil without PoolSize and IdentityOnStdin
}

// NewLauncher returns a Launcher that starts command (program first). It
// refuses an empty command, an Env that sets an identity variable and
// options that LauncherOptions.Validate refuses.
func NewLauncher(command []string, opts LauncherOptions) (*Launcher, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, errors.New("worker: no command to start")
	}
	for _, kv := range opts.Env {
		if name, _, _ := strings.Cut(kv, "="); workerproto.IsReservedEnv(name) {
			return nil, fmt.Errorf("%w: %s (the gateway sets it for each session)", ErrIdentityEnv, name)
		}
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.ServerName == "" {
		opts.ServerName = DefaultServerName
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "dev"
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	l := &Launcher{command: slices.Clone(command), opts: opts}
	for _, k := range baseEnv {
		if v, ok := opts.LookupEnv(k); ok {
			l.base = append(l.base, k+"="+v)
		}
	}
	if opts.IdentityOnStdin && opts.PoolSize > 0 && opts.Accounts == nil {
		l.pool = newPool(l, opts.PoolSize, opts.Logger)
	}
	return l, nil
}

// Session says whose worker to start.
type Session struct {
	User     string // the user id the session runs as
	ID       string // the MCP session id
	ReadOnly bool   // the session may not change anything
	// Tools limits the worker to these tools (the caller's policy grant);
	// nil means every tool. See workerproto.Identity.Tools.
	Tools []string
	Scope string // workerproto.ScopeSession (the default) or ScopeUser: what the worker serves
	// Credentials are NAME=value pairs of the user's own downstream
	// credentials (package credential), added after Env and before the
	// identity. A worker that gets any is started for its user alone,
	// never taken from the pool.
	Credentials []string
	// Files are memory-backed files handed to the worker as its fds 3,
	// 4…, in order (credentials it reads from /proc/self/fd/N); the
	// worker's start takes them over and closes them in the gateway.
	Files []*os.File
	// Sessions says that the worker (ScopeUser) hosts its key's sessions
	// too (workerproto.Identity.Sessions); the Conn is then framed
	// (ConnConfig.Framed) and opens them (Conn.OpenSession).
	Sessions bool
}

// StopGrace returns the time a worker gets between SIGTERM and SIGKILL, so
// that callers can bound their wait for a stop.
func (l *Launcher) StopGrace() time.Duration { return l.opts.StopGrace }

// Start starts a worker for s and returns the connection to it, configured
// by cfg (whose StopGrace the launcher sets). cfg.Logger also receives the
// worker's stderr.
//
// With a pool (StartPool), it claims a pre-started worker and writes the
// identity as its first line on stdin before the Conn exists, so that no
// message of the session can come before it; with none ready, it starts
// one with the identity in its environment, as without a pool.
func (l *Launcher) Start(s Session, cfg ConnConfig) (*Conn, error) {
	id := workerproto.Identity{
		User: s.User, SessionID: s.ID, ReadOnly: s.ReadOnly, Toolsets: l.opts.Toolsets, Tools: s.Tools,
		ServerName: l.opts.ServerName, ServerVersion: l.opts.ServerVersion, ServerTitle: l.opts.ServerTitle,
		Scope: s.Scope, Sessions: s.Sessions,
	}
	cfg.StopGrace = l.opts.StopGrace
	cfg.Framed = s.Sessions
	if l.opts.Accounts != nil {
		return l.startAs(id, s, cfg)
	}
	if len(s.Credentials) == 0 && len(s.Files) == 0 {
		if p := l.claim(id, cfg.Logger); p != nil {
			c := NewConn(p, cfg)
			c.pooled = true
			return c, nil
		}
	}
	pc := l.processConfig(l.environ(id, s.Credentials), cfg.Logger)
	pc.Files = s.Files
	p, err := StartProcess(pc)
	if err != nil {
		return nil, err
	}
	return NewConn(p, cfg), nil
}

// claim returns a pooled worker that has been handed id, or nil.
func (l *Launcher) claim(id workerproto.Identity, log *slog.Logger) *Process {
	if l.pool == nil {
		return nil
	}
	line := id.Line()
	if len(line) >= workerproto.MaxIdentityLine {
		// A pre-started worker refuses a longer line (an identity from a
		// very large token claim): the session starts its own worker, with
		// the identity in its environment.
		l.pool.misses.Add(1)
		return nil
	}
	for {
		p := l.pool.claim()
		if p == nil {
			l.pool.misses.Add(1)
			return nil
		}
		if log != nil {
			p.log.Store(log)
		}
		if err := p.Send(line); err == nil {
			l.pool.claimed()
			l.pool.hits.Add(1)
			return p
		}
		l.pool.stopProc(p) // gone between claim and write: the next one
	}
}

// StartPool starts keeping LauncherOptions.PoolSize workers ready; it does
// nothing without a pool, once called before, or after StopPool. The
// gateway calls it when it starts serving.
func (l *Launcher) StartPool() {
	if l.pool != nil {
		l.pool.start()
	}
}

// StopPool stops refilling the pool and stops the workers in it, waiting
// for them, bounded by ctx; a later Start starts its worker cold. Workers
// already claimed are their sessions' to stop.
func (l *Launcher) StopPool(ctx context.Context) error {
	if l.pool == nil {
		return nil
	}
	return l.pool.close(ctx)
}

// WaitPool waits until n pre-started workers are ready, for tests and
// benchmarks that want a full pool; false when the launcher keeps no pool,
// the pool has stopped, or ctx ended first.
func (l *Launcher) WaitPool(ctx context.Context, n int) bool {
	return l.pool != nil && l.pool.wait(ctx, n)
}

// PoolStats returns how many Starts found a pre-started worker ready
// (hits) and how many started one cold because the pool was empty
// (misses); both 0 without a pool.
func (l *Launcher) PoolStats() (hits, misses int64) {
	if l.pool == nil {
		return 0, 0
	}
	return l.pool.hits.Load(), l.pool.misses.Load()
}

// processConfig is how every worker of l starts, with env as its whole
// environment.
func (l *Launcher) processConfig(env []string, log *slog.Logger) ProcessConfig {
	return ProcessConfig{Command: l.command, Env: env, Dir: l.opts.Dir, Logger: log, SendTimeout: l.opts.SendTimeout, MaxLineBytes: l.opts.MaxMessageBytes,
		Limits: l.opts.Limits, LimitHelper: l.opts.LimitHelper, Cgroup: l.opts.Cgroup, Confine: l.opts.Confine}
}

// pooledEnv is a pre-started worker's environment: the base variables,
// Env, and the marker in place of the identity.
func (l *Launcher) pooledEnv() []string {
	env := make([]string, 0, len(l.base)+len(l.opts.Env)+1)
	return append(append(append(env, l.base...), l.opts.Env...), workerproto.EnvPrestarted+"=true")
}

// environ is a worker's whole environment: the base variables, Env, the
// user's credentials, then the identity, last, so that it would win over
// any earlier entry of the same name even if NewLauncher had not refused
// one (os/exec keeps the last).
func (l *Launcher) environ(id workerproto.Identity, creds []string) []string {
	idEnv := id.Environ()
	env := make([]string, 0, len(l.base)+len(l.opts.Env)+len(creds)+len(idEnv))
	env = append(append(append(append(env, l.base...), l.opts.Env...), creds...), idEnv...)
	return env
}
