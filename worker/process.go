package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxLineBytes bounds one JSON-RPC message a worker writes on
// stdout when ProcessConfig.MaxLineBytes is 0 (config
// limits.max_worker_message_bytes). It is well above what the built-in
// worker ever writes (tools: 256 KiB of text, 16 MiB of structured content).
const DefaultMaxLineBytes = 64 << 20

// maxStderrLine bounds one stderr line copied into the gateway log.
const maxStderrLine = 4096

// logLinesPerSecond bounds the lines one worker may put into the gateway log
// each second; beyond it lines are counted and the count logged, so a
// chatty or broken worker cannot flood the log.
const logLinesPerSecond = 200

// logLimiter lets through logLinesPerSecond lines per one-second window.
type logLimiter struct {
	mu      sync.Mutex
	window  time.Time
	n       int
	dropped int
}

// allow reports whether one more line may be logged now, and how many were
// dropped in the window that just ended (to be reported once).
func (l *logLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second {
		l.window, l.n, dropped, l.dropped = now, 0, l.dropped, 0
	}
	if l.n >= logLinesPerSecond {
		l.dropped++
		return false, dropped
	}
	l.n++
	return true, dropped
}

// ProcessConfig says how to start one worker process.
type ProcessConfig struct {
	Command []string     // program and arguments; required
	Env     []string     // the whole environment (NAME=value); never the gateway's own
	Dir     string       // working directory; empty means the gateway's
	Logger  *slog.Logger // receives stderr lines; nil means slog.Default()
	// SendTimeout bounds one write to the worker's stdin (default 30s). A
	// write blocks only while the pipe is full, so a worker that reads
	// nothing for this long with 64 KiB waiting is hung, or deadlocked
	// writing its own stdout: it is killed (a partial line cannot be taken
	// back), its requests fail with the worker-exited error, and no
	// gateway goroutine waits on it for ever.
	SendTimeout time.Duration
	// Limits bound the process (see Limits). Its rlimits need LimitHelper;
	// its cgroup controls need Cgroup, and are skipped without one.
	Limits Limits
	// LimitHelper is the program, with its first arguments, that applies
	// the rlimits and execs the worker: a command that calls ExecLimited
	// (mcpgate exec-limited). Required when an rlimit is set.
	LimitHelper []string
	// Cgroup is the delegated cgroup the worker gets a leaf of; nil means
	// none.
	Cgroup *Cgroup
	// Account is the OS account the worker runs as; nil means the
	// gateway's own. The switch happens between fork and exec (and so
	// before the limit helper, whose RLIMIT_NPROC then counts that
	// account's processes).
	Account *Account
	// Confine starts the worker through LimitHelper even when no rlimit
	// is set, because the helper's own arguments confine it (mcpgate
	// exec-limited's sandbox): one exec, whatever it applies.
	Confine bool

	// Files are handed to the worker as its fds 3, 4… (exec.Cmd's
	// ExtraFiles). StartProcess closes them in the gateway once the worker
	// has them, or has failed to start.
	Files []*os.File

	// MaxLineBytes bounds one message the worker writes; 0 means
	// DefaultMaxLineBytes. A longer line is read through without being
	// kept, and ReadLoop hands its first bytes to its tooLong function.
	MaxLineBytes int
}

// Process is one running worker: a child in its own process group whose
// stdin and stdout carry newline-delimited JSON-RPC.
type Process struct {
	cmd         *exec.Cmd
	stdin       *os.File
	stdout      *os.File
	log         atomic.Pointer[slog.Logger] // a pooled worker's moves to its session's when claimed
	limit       logLimiter
	sendTimeout time.Duration
	max         int // MaxLineBytes

	writeMu sync.Mutex

	limits     Limits
	leaf       *leaf         // the worker's cgroup, or nil
	sawOOM     atomic.Bool   // the worker said on stderr that memory ran out
	stderrDone chan struct{} // closed when copyStderr has read the last line

	done     chan struct{} // closed once the process has been reaped
	exitErr  error         // set before done is closed
	limitHit string        // the limit that ended it, if any; set before done is closed
}

// ErrExited is returned by Send after the worker process has exited.
var ErrExited = errors.New("worker: process has exited")

// StartProcess starts a worker. The child gets its own process group
// (Setpgid), so that Stop can kill whatever it spawned too.
func StartProcess(cfg ProcessConfig) (*Process, error) {
	defer closeAll(cfg.Files...)
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("worker: no command to start")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// Pipes we own rather than cmd.StdoutPipe: Wait then only waits for the
	// process, never for a grandchild that inherited a pipe end.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("worker: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("worker: stderr pipe: %w", err)
	}
	argv := cfg.Command
	if cfg.Limits.rlimited() || cfg.Confine {
		if len(cfg.LimitHelper) == 0 {
			closeAll(inR, inW, outR, outW, errR, errW)
			return nil, errors.New("worker: rlimits or confinement are set but no limit helper is configured")
		}
		prog, err := resolve(cfg.Command[0])
		if err != nil {
			closeAll(inR, inW, outR, outW, errR, errW)
			return nil, fmt.Errorf("worker: start %s: %w", cfg.Command[0], err)
		}
		argv = cfg.Limits.helperArgv(cfg.LimitHelper, prog, cfg.Command)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = cfg.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean the gateway's environment
	}
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = cfg.Files
	// On Linux, if the gateway itself dies (kill -9, a crash), the kernel
	// kills the worker rather than leave it orphaned (procAttr). Its own
	// children are the service manager's to clean up
	// (deploy/mcpgate.service kills the whole cgroup).
	cmd.SysProcAttr = procAttr()
	if cfg.Account != nil {
		asAccount(cmd.SysProcAttr, cfg.Account)
	}
	var lf *leaf
	if cfg.Cgroup != nil && cfg.Limits.cgrouped() {
		if lf, err = cfg.Cgroup.newLeaf(cfg.Limits); err != nil {
			closeAll(inR, inW, outR, outW, errR, errW)
			return nil, err
		}
		// Born in its leaf (clone3 CLONE_INTO_CGROUP): limited from its
		// first instruction.
		bornInCgroup(cmd.SysProcAttr, lf.fd)
	}
	err = cmd.Start()
	if lf != nil {
		lf.closeFD()
	}
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		if lf != nil {
			lf.remove()
		}
		return nil, fmt.Errorf("worker: start %s: %w", cfg.Command[0], err)
	}
	closeAll(inR, outW, errW) // the child's ends
	max := cfg.MaxLineBytes
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	p := &Process{cmd: cmd, stdin: inW, stdout: outR, sendTimeout: cfg.SendTimeout, max: max, done: make(chan struct{}),
		limits: cfg.Limits, leaf: lf, stderrDone: make(chan struct{})}
	p.log.Store(log)
	if p.sendTimeout <= 0 {
		p.sendTimeout = 30 * time.Second
	}
	go p.copyStderr(errR)
	go p.wait()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Pid returns the worker's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr returns how the process ended (nil for exit status 0); valid after
// Done is closed.
func (p *Process) ExitErr() error {
	<-p.done
	return p.exitErr
}

// wait reaps the process, so that no zombie is left, then kills what is left
// of its process group, so that no orphan is left either.
func (p *Process) wait() {
	err := p.cmd.Wait()
	// Any child still in the group would outlive its worker: kill it. The
	// group id cannot be reused while a member lives, so this cannot hit an
	// unrelated process.
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	p.stdin.Close()
	// The last stderr lines may say why it ended; a grandchild that left
	// the group could hold stderr open, so do not wait long for them.
	t := time.NewTimer(time.Second)
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
	t.Stop()
	p.exitErr = err
	p.limitHit = p.limitHitBy(p.cmd.ProcessState, p.sawOOM.Load())
	if p.leaf != nil {
		p.leaf.remove()
	}
	close(p.done)
}

// Limit names the limit (LimitMemory and the rest) that ended the process,
// or "" when none did; valid after Done is closed.
func (p *Process) Limit() string {
	<-p.done
	return p.limitHit
}

// copyStderr sends the worker's stderr to the log, a line at a time.
func (p *Process) copyStderr(r *os.File) {
	defer close(p.stderrDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if p.limits.AddressSpace > 0 && outOfMemory(string(line)) {
			p.sawOOM.Store(true)
		}
		if len(line) > 0 {
			p.Logf(slog.LevelInfo, "worker stderr", "line", string(line))
		}
		for isPrefix && err == nil { // drop the rest of an over-long line
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// Logf logs a line about the worker, within the worker's log rate limit.
func (p *Process) Logf(level slog.Level, msg string, args ...any) {
	ok, dropped := p.limit.allow(time.Now())
	if dropped > 0 {
		p.log.Load().Warn("worker: log lines dropped (rate limit)", "pid", p.Pid(), "dropped", dropped)
	}
	if ok {
		p.log.Load().Log(context.Background(), level, msg, append([]any{"pid", p.Pid()}, args...)...)
	}
}

// Send writes one message and its newline to the worker's stdin. It blocks
// only while the pipe is full, at most ProcessConfig.SendTimeout; a write to
// an exited worker fails.
func (p *Process) Send(msg []byte) error {
	select {
	case <-p.done:
		return ErrExited
	default:
	}
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_ = p.stdin.SetWriteDeadline(time.Now().Add(p.sendTimeout))
	if _, err := p.stdin.Write(buf); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.log.Load().Error("worker: not reading its input; killing it", "pid", p.Pid(), "waited", p.sendTimeout)
			_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		}
		return fmt.Errorf("%w: %v", ErrExited, err)
	}
	return nil
}

// Stop ends the process the way MCP's stdio transport asks (MCP 2025-11-25
// §Lifecycle, Shutdown): close its stdin and give it a moment to exit, then
// StopGroup. It waits until the process has been reaped; ctx bounds the
// whole wait.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.stdin.Close()
	if waitClosed(ctx, p.done, min(grace/2, time.Second)) {
		return nil
	}
	return StopGroup(ctx, p.Pid(), p.done, grace)
}

// StopGroup ends the process group that pid leads (a child started with
// Setpgid): SIGTERM to the whole group, so that what the process spawned is
// asked too, then SIGKILL to the group if done (closed by whoever reaps the
// process) is still open after grace. It returns once done is closed, or
// with an error when ctx ends first. The reaper should then kill the group
// once more, for children that outlived their leader.
func StopGroup(ctx context.Context, pid int, done <-chan struct{}, grace time.Duration) error {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	if waitClosed(ctx, done, grace) {
		return nil
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worker: pid %d not reaped: %w", pid, ctx.Err())
	}
}

// waitClosed waits up to d for done to close; false on timeout or ctx.
func waitClosed(ctx context.Context, done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// ExitDescription says in words how a process ended, for error messages.
func ExitDescription(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
