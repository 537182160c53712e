package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/bridge"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/local"
)

// socketDefault is --socket given without a path: the configuration's
// socket, else the per-user default.
const socketDefault = "\x00default"

// wantsSocket says whether bridge's arguments ask for the local mode.
func wantsSocket(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "--socket" || strings.HasPrefix(a, "--socket=") })
}

// shim is `mcpgate bridge --socket [PATH]`: stdio on one side, the
// gateway's Unix socket on the other, starting the daemon when nothing
// serves the socket.
type shim struct {
	m       *Main
	path    string
	config  string // --config, passed on to the daemon
	system  bool   // a system socket: another account's, never started here
	noStart bool
	log     *slog.Logger
	// clientGone is set once the client's stdin has ended: what the
	// bridge still sends (the session's DELETE) is no reason to start a
	// daemon.
	clientGone atomic.Bool
}

// watchEOF reads r and sets gone once it ends.
type watchEOF struct {
	r    io.Reader
	gone *atomic.Bool
}

func (w watchEOF) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil {
		w.gone.Store(true)
	}
	return n, err
}

// runShim is `mcpgate bridge --socket`.
func runShim(ctx context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("bridge", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate bridge --socket [PATH] [--config FILE] [--server NAME]

An MCP server on stdin/stdout that forwards every message, unchanged, to
the gateway on the Unix socket at PATH (default: the configuration's
unix: address, else $XDG_RUNTIME_DIR/mcpgate/mcpgate.sock, else
~/.local/state/mcpgate/mcpgate.sock). If nothing serves it, it starts
"mcpgate serve --daemon" with the same configuration, which exits after
server.idle_exit without clients. No token: the kernel tells the gateway
who you are. Logs go to stderr only.

`)
		fs.PrintDefaults()
	}
	s := &shim{m: m}
	var server string
	fs.StringVar(&s.path, "socket", "", "the gateway's socket (given alone: the default)")
	fs.Lookup("socket").NoOptDefVal = socketDefault
	fs.StringVar(&s.config, "config", "", "the configuration the daemon runs with (or "+config.EnvConfigFile+")")
	fs.StringVar(&server, "server", "", "the server to reach, one of the configuration's servers (/mcp/NAME); default /mcp")
	fs.BoolVar(&s.system, "system", false, "the socket is a system socket (another account's, such as /run/mcpgate/mcpgate.sock): connect, never start a daemon")
	fs.BoolVar(&s.noStart, "no-start", false, "do not start the daemon when nothing serves the socket")
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	if fs.NArg() > 0 || strings.ContainsAny(server, "/?#%\\ \x00\r\n") {
		fmt.Fprintln(m.Stderr, "mcpgate bridge: --socket takes no arguments, and --server a name (see --help)")
		return errUsage
	}
	if err := s.resolvePath(); err != nil {
		return err
	}
	s.log = slog.New(slog.NewTextHandler(m.Stderr, nil))
	target := "/mcp"
	if server != "" {
		target += "/" + server
	}
	c, err := s.dialStdio(ctx, target)
	if errors.Is(err, local.ErrOldGateway) {
		s.log.Info("mcpgate bridge: the gateway on the socket speaks HTTP only (an older mcpgate); relaying over HTTP", "socket", s.path)
		return s.bridgeHTTP(ctx, target)
	}
	if err != nil {
		return err
	}
	// Two copies that wait on the kernel need no second thread: with one,
	// the runtime spins less between messages (a third less CPU a call).
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	return pipe(ctx, m.Stdin, m.Stdout, m.Stderr, c)
}

// dialStdio opens the stdio connection to target, starting the daemon
// first when nothing serves the socket (and this is no system socket).
func (s *shim) dialStdio(ctx context.Context, target string) (net.Conn, error) {
	o := local.Options{System: s.system}
	c, err := local.DialStdio(ctx, s.path, o, target)
	if !errors.Is(err, local.ErrNotRunning) || s.system || s.noStart {
		return c, err
	}
	if err := s.startDaemon(ctx); err != nil {
		return nil, err
	}
	return local.DialStdio(ctx, s.path, o, target)
}

// pipe copies the client's messages to the gateway and the gateway's to
// the client, unread: the daemon relays them. The client's input ending
// is passed on (the daemon then ends the session and closes); the
// gateway closing first (its daemon stopped or died) ends the shim, so
// that the client sees its server go rather than waiting on it.
func pipe(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, c net.Conn) error {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var inputEnded atomic.Bool
	go func() {
		_, _ = io.Copy(c, stdin)
		inputEnded.Store(true)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	_, err := io.Copy(stdout, c)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("mcpgate bridge: the connection to the gateway broke: %w", err)
	case !inputEnded.Load():
		// Said, not failed: the client sees its server end either way,
		// and the shim did what it could.
		fmt.Fprintln(stderr, "mcpgate bridge: the gateway ended the connection (it stopped); start the client's server again to start a new one")
	}
	return nil
}

// bridgeHTTP relays the client's messages as HTTP requests over the
// socket: for a daemon of an older mcpgate, which takes HTTP only.
func (s *shim) bridgeHTTP(ctx context.Context, target string) error {
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return s.dial(ctx) },
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	u := "http://localhost" + target
	return bridge.Run(ctx, watchEOF{s.m.Stdin, &s.clientGone}, s.m.Stdout, bridge.Options{URL: u, HTTPClient: &http.Client{Transport: tr}, Log: s.log})
}

// resolvePath settles the socket's path: --socket PATH, else the
// configuration's unix: address, else the per-user default.
func (s *shim) resolvePath() error {
	if s.path != socketDefault && s.path != "" {
		return nil
	}
	entry := "unix:"
	cfg, err := config.Loader{Getenv: s.m.Getenv}.Load(s.config, nil)
	if err != nil {
		return err
	}
	if e := cfg.SocketListen(); e != "" {
		entry = e
	}
	p, err := config.SocketPath(entry, s.m.Getenv)
	s.path = p
	return err
}

// dial connects to the socket, starting the daemon first when nothing
// serves it (and this is no system socket).
func (s *shim) dial(ctx context.Context) (net.Conn, error) {
	o := local.Options{System: s.system}
	c, err := local.Dial(ctx, s.path, o)
	if !errors.Is(err, local.ErrNotRunning) || s.system || s.noStart || s.clientGone.Load() {
		return c, err
	}
	if err := s.startDaemon(ctx); err != nil {
		return nil, err
	}
	return local.Dial(ctx, s.path, o)
}

// startDaemon runs `mcpgate serve --daemon` for the socket, which returns
// once the daemon serves (or another start won the race).
func (s *shim) startDaemon(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcpgate bridge: finding this executable: %w", err)
	}
	args := []string{"serve", "--daemon", "--listen", "unix:" + s.path}
	if s.config != "" {
		args = append(args, "--config", s.config)
	}
	s.log.Info("mcpgate bridge: nothing serves the socket; starting the gateway", "socket", s.path)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = s.m.Stderr, s.m.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mcpgate bridge: starting the gateway on %s: %w", s.path, err)
	}
	return nil
}
