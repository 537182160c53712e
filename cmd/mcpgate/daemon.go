package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/filelock"
	"github.com/mcpgate/mcpgate/local"
)

// daemonMode is `mcpgate serve --daemon`: the gateway on the socket only,
// exiting when idle; detached unless --foreground.
type daemonMode struct {
	on, foreground bool
	readyFD        int // the pipe to tell the starting process; 0: none
	idleExit       time.Duration
}

// addDaemonFlags adds serve's --daemon, --foreground and the internal
// --ready-fd to fs.
func addDaemonFlags(fs *pflag.FlagSet) *daemonMode {
	d := &daemonMode{}
	fs.BoolVar(&d.on, "daemon", false, "serve the Unix socket of server.listen (unix: for the per-user default) only, detached, and exit after server.idle_exit without clients; mcpgate bridge --socket starts it")
	fs.BoolVar(&d.foreground, "foreground", false, "with --daemon: stay attached, logging to stderr (for debugging)")
	fs.IntVar(&d.readyFD, "ready-fd", 0, "")
	_ = fs.MarkHidden("ready-fd")
	return d
}

// adjust makes cfg the daemon's: its socket only (unix: when
// server.listen names none), no metrics listener unless one was chosen
// (two users' daemons would contend for the default port), and the
// default SQLite file in the user's state directory rather than in
// whatever directory the first client started in. --foreground alone
// means --daemon --foreground.
func (d *daemonMode) adjust(cfg *config.Config, getenv func(string) string) {
	d.on = d.on || d.foreground
	if !d.on {
		return
	}
	cfg.Server.Listen = cfg.SocketListen()
	if cfg.Server.Listen == "" {
		cfg.Server.Listen = "unix:"
	}
	if cfg.Metrics.Listen == "" || cfg.Metrics.Listen == config.DefaultMetricsListen {
		cfg.Metrics.Listen = config.MetricsOff
	}
	d.idleExit = cmpOr(cfg.Server.IdleExit, config.DefaultIdleExit)
	if cfg.Database.Path == config.DefaultDatabasePath && (cfg.Database.Driver == "" || cfg.Database.Driver == config.DefaultDriver) {
		if dir, err := local.StateDir(getenv); err == nil {
			cfg.Database.Path = filepath.Join(dir, "mcpgate.db")
		}
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// detach says whether serve should start the daemon in the background
// and return.
func (d *daemonMode) detach() bool { return d.on && !d.foreground }

// ready tells the process that started the daemon that it serves.
func (d *daemonMode) ready() {
	if d.readyFD <= 0 {
		return
	}
	f := os.NewFile(uintptr(d.readyFD), "ready")
	if f == nil {
		return
	}
	_, _ = io.WriteString(f, "ready\n")
	f.Close()
	d.readyFD = 0
}

type daemonKey struct{}

// withDaemon carries d to runGateway when it is on.
func withDaemon(ctx context.Context, d *daemonMode) context.Context {
	if d == nil || !d.on {
		return ctx
	}
	return context.WithValue(ctx, daemonKey{}, d)
}

func daemonFrom(ctx context.Context) *daemonMode {
	d, _ := ctx.Value(daemonKey{}).(*daemonMode)
	return d
}

// daemonStartTimeout bounds the wait for a daemon to serve.
var daemonStartTimeout = 60 * time.Second

// detachDaemon starts the daemon of cfg's socket in the background (its
// own session, stdin from /dev/null, its log in the file beside the
// socket), waits until it serves, and returns; when one serves the socket
// already it returns at once. Starts are serialized by a lock beside the
// socket, so that two clients starting at once start one daemon.
func detachDaemon(ctx context.Context, m *Main, cfg *config.Config, args []string) error {
	path, err := config.SocketPath(cfg.SocketListen(), m.Getenv)
	if err != nil {
		return err
	}
	o := local.Options{System: cfg.SystemSocket()}
	if err := local.Prepare(filepath.Dir(path), o); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, daemonStartTimeout)
	defer cancel()
	lock, err := filelock.Acquire(ctx, path+".starting")
	if err != nil {
		return fmt.Errorf("mcpgate: waiting for another start of the daemon: %w", err)
	}
	defer lock.Unlock()
	if c, err := local.Dial(ctx, path, local.Options{}); err == nil {
		c.Close()
		return nil // it runs
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcpgate: finding this executable: %w", err)
	}
	logPath := local.LogPath(path)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("mcpgate: the daemon's log: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, append(append([]string{"serve"}, args...), "--foreground", "--ready-fd", "3")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = detachedAttr()
	cmd.Dir = "/"
	if wd, err := os.Getwd(); err == nil {
		cmd.Dir = wd // relative paths of the configuration stay what they were
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("mcpgate: starting the daemon: %w", err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.TrimSpace(s) == "ready" {
			fmt.Fprintf(m.Stderr, "mcpgate: the gateway serves unix:%s (log: %s)\n", path, logPath)
			return nil
		}
	case <-ctx.Done():
	}
	// No word from it: it failed, or another daemon serves the socket.
	if c, err := local.Dial(context.Background(), path, local.Options{}); err == nil {
		c.Close()
		return nil
	}
	return fmt.Errorf("mcpgate: the daemon did not start; its log (%s) ends:\n%s", logPath, tail(logPath, 2048))
}

// tail is the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}
