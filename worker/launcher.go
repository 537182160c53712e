package worker

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// baseEnv names the only variables a worker inherits from the gateway; the
// gateway's environment may hold secrets.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ"}

// ErrIdentityEnv is returned by NewLauncher when the environment it is given
// sets a variable of the identity contract (EnvUser and the rest): a
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
	// MaxMessageBytes bounds one message a worker writes (0:
	// DefaultMaxLineBytes); an answer over it fails its request alone
	// (KindTooLarge). See ProcessConfig.MaxLineBytes.
	MaxMessageBytes int
	// LookupEnv reads the gateway's environment, for the base variables;
	// nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Launcher starts worker processes, one per identity: cmd/mcpgate builds it
// from the configuration and the gateway asks it for each session's worker.
// It is the only place that decides what a worker's environment holds.
type Launcher struct {
	command []string
	opts    LauncherOptions
	base    []string // the base variables, NAME=value
}

// NewLauncher returns a Launcher that starts command (program first). It
// refuses an empty command and an Env that sets an identity variable.
func NewLauncher(command []string, opts LauncherOptions) (*Launcher, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, errors.New("worker: no command to start")
	}
	for _, kv := range opts.Env {
		if name, _, _ := strings.Cut(kv, "="); IsIdentityEnv(name) {
			return nil, fmt.Errorf("%w: %s (the gateway sets it for each session)", ErrIdentityEnv, name)
		}
	}
	if opts.ServerName == "" {
		opts.ServerName = "mcpgate"
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "dev"
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 5 * time.Second
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	l := &Launcher{command: slices.Clone(command), opts: opts}
	for _, k := range baseEnv {
		if v, ok := opts.LookupEnv(k); ok {
			l.base = append(l.base, k+"="+v)
		}
	}
	return l, nil
}

// Session says whose worker to start.
type Session struct {
	User     string // the user id the session runs as
	ID       string // the MCP session id
	ReadOnly bool   // the session may not change anything
	// Tools limits the worker to these tools (the caller's policy grant);
	// nil means every tool. See Identity.Tools.
	Tools []string
	Scope string // ScopeSession (the default) or ScopeUser: what the worker serves
}

// StopGrace returns the time a worker gets between SIGTERM and SIGKILL, so
// that callers can bound their wait for a stop.
func (l *Launcher) StopGrace() time.Duration { return l.opts.StopGrace }

// Start starts a worker for s and returns the connection to it, configured
// by cfg (whose StopGrace the launcher sets). cfg.Logger also receives the
// worker's stderr.
func (l *Launcher) Start(s Session, cfg ConnConfig) (*Conn, error) {
	id := Identity{
		User: s.User, SessionID: s.ID, ReadOnly: s.ReadOnly, Toolsets: l.opts.Toolsets, Tools: s.Tools,
		ServerName: l.opts.ServerName, ServerVersion: l.opts.ServerVersion, ServerTitle: l.opts.ServerTitle,
		Scope: s.Scope,
	}
	p, err := StartProcess(ProcessConfig{Command: l.command, Env: l.environ(id), Dir: l.opts.Dir, Logger: cfg.Logger, SendTimeout: l.opts.SendTimeout, MaxLineBytes: l.opts.MaxMessageBytes,
		Limits: l.opts.Limits, LimitHelper: l.opts.LimitHelper, Cgroup: l.opts.Cgroup})
	if err != nil {
		return nil, err
	}
	cfg.StopGrace = l.opts.StopGrace
	return NewConn(p, cfg), nil
}

// environ is a worker's whole environment: the base variables, Env, then the
// identity, last, so that it would win over any earlier entry of the same
// name even if NewLauncher had not refused one (os/exec keeps the last).
func (l *Launcher) environ(id Identity) []string {
	idEnv := id.Environ()
	env := make([]string, 0, len(l.base)+len(l.opts.Env)+len(idEnv))
	env = append(append(append(env, l.base...), l.opts.Env...), idEnv...)
	return env
}
