package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/worker"
)

// protocolVersion is the revision every session asks for. The go-sdk client
// would otherwise try 2026-07-28's server/discover first and fall back, an
// extra round trip that only some systems would pay.
const protocolVersion = "2025-11-25"

// protocolModern is the revision the stateless phase's clients negotiate,
// the go-sdk client's default.
const protocolModern = "2026-07-28"

// A session is one MCP client session with its own connection.
type session struct {
	*mcp.ClientSession
	release func() // frees the session's own HTTP connections; may be nil
}

// Close ends the session (DELETE over HTTP, closing stdin over stdio).
func (s *session) Close() error {
	err := s.ClientSession.Close()
	if s.release != nil {
		s.release()
	}
	return err
}

// A target is a running system under test.
type target interface {
	// open starts a new session: its own connection, initialize, initialized.
	open(ctx context.Context) (*session, error)
	// pids lists every process the system runs: the server process and all
	// its descendants (its workers), or the floor's workers.
	pids() ([]int, error)
	// stop ends the system and every process it started.
	stop() error
}

// A process the harness started: a server under test. It runs in its own
// process group so that stop can end its workers too, and dies with the
// harness (Pdeathsig) if the harness is killed.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done closes
	log  *os.File
}

func startProc(name string, argv, env []string, logPath string) (*proc, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("mcpbench: %s: no command", name)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("mcpbench: %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("mcpbench: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logf}
	go func() {
		p.err = cmd.Wait()
		// Workers that outlived their parent are in the same group.
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process and its process group, which holds the workers it
// started, the way the gateway stops a worker (worker.StopGroup: SIGTERM to
// the group, SIGKILL after grace).
func (p *proc) stop(grace time.Duration) error {
	defer p.log.Close()
	select {
	case <-p.done:
		return nil
	default:
	}
	return worker.StopGroup(context.Background(), p.pid(), p.done, grace)
}

// waitReady waits until addr accepts TCP connections, the process exits, or
// the timeout passes. Polling is the only way to learn that an arbitrary
// server (supergateway, mcpgate) is listening.
func waitReady(ctx context.Context, p *proc, addr string, timeout time.Duration) error {
	return waitDial(ctx, p, "tcp", addr, timeout)
}

// waitDial is waitReady on any network ("unix": a socket's path).
func waitDial(ctx context.Context, p *proc, network, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("mcpbench: %s exited before listening (%v); see %s", p.name, p.err, p.log.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mcpbench: %s did not listen on %s within %v; see %s", p.name, addr, timeout, p.log.Name())
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("mcpbench: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// connect runs the MCP handshake over t.
func connect(ctx context.Context, client *mcp.Client, t mcp.Transport) (*mcp.ClientSession, error) {
	return client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// stdioTarget is the floor: each session is a worker process driven
// directly over its stdin and stdout, no HTTP in between.
type stdioTarget struct {
	client *mcp.Client
	argv   []string
	env    []string
	stderr io.Writer
	procfs ProcFS

	mu   sync.Mutex
	live map[int]bool // pids of the workers of open sessions
}

func (t *stdioTarget) open(ctx context.Context) (*session, error) {
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Env = t.env
	cmd.Stderr = t.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cs, err := connect(ctx, t.client, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	t.mu.Lock()
	if t.live == nil {
		t.live = make(map[int]bool)
	}
	t.live[pid] = true
	t.mu.Unlock()
	return &session{ClientSession: cs, release: func() {
		t.mu.Lock()
		delete(t.live, pid)
		t.mu.Unlock()
	}}, nil
}

// pids lists the workers of the open sessions and their descendants.
func (t *stdioTarget) pids() ([]int, error) {
	t.mu.Lock()
	roots := make([]int, 0, len(t.live))
	for pid := range t.live {
		roots = append(roots, pid)
	}
	t.mu.Unlock()
	if len(roots) == 0 {
		return nil, nil
	}
	return t.procfs.Tree(roots...)
}

// stop closes the workers' log; the workers end with their sessions.
func (t *stdioTarget) stop() error {
	if c, ok := t.stderr.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// httpTarget is a system reached over Streamable HTTP.
type httpTarget struct {
	client   *mcp.Client
	endpoint string
	tls      *tls.Config // nil for plain HTTP
	token    string      // bearer token; empty for none
	procs    []*proc     // the system: measured
	helpers  []*proc     // what the system needs but is not (a test issuer): not measured
	procfs   ProcFS

	// users are the users stateless clients act as, by their bearer
	// tokens (userTokens, one each); empty: one user, token's or the
	// localhost mode's, whose name the harness does not know.
	users      []string
	userTokens []string
	// perUserWorkers: the system runs a worker process per user for MCP
	// 2026-07-28 requests (mcpgate), counted after each stateless run.
	perUserWorkers bool
	// issuer is the test issuer's URL (the TLS system), whose token
	// endpoint binds a token to a DPoP key.
	issuer string
}

func (t *httpTarget) open(ctx context.Context) (*session, error) {
	return t.connect(ctx, t.token, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// openUser starts a session of user u (an index into modernUsers), as
// open does for the system's one user.
func (t *httpTarget) openUser(ctx context.Context, u int) (*session, error) {
	token := t.token
	if len(t.userTokens) > 0 {
		token = t.userTokens[u%len(t.userTokens)]
	}
	return t.connect(ctx, token, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// openModern starts a stateless client of user u (an index into
// modernUsers) with the go-sdk client at its defaults, which asks for
// 2026-07-28 first (server/discover). A client that fell back to a
// session is an error: it would measure the wrong protocol.
func (t *httpTarget) openModern(ctx context.Context, u int) (*session, error) {
	token := t.token
	if len(t.userTokens) > 0 {
		token = t.userTokens[u%len(t.userTokens)]
	}
	s, err := t.connect(ctx, token, nil)
	if err != nil {
		return nil, err
	}
	if v := s.InitializeResult().ProtocolVersion; v != protocolModern {
		_ = s.Close()
		return nil, fmt.Errorf("mcpbench: negotiated %s, not %s (the system fell back to a session)", v, protocolModern)
	}
	return s, nil
}

// modernUsers names the users openModern can act as; "" is the one user
// of a system whose user the harness does not name.
func (t *httpTarget) modernUsers() []string {
	if len(t.users) == 0 {
		return []string{""}
	}
	return t.users
}

// connect opens a client with its own http.Transport and opts (nil: the
// go-sdk client's defaults).
func (t *httpTarget) connect(ctx context.Context, token string, opts *mcp.ClientSessionOptions) (*session, error) {
	return t.connectVia(ctx, func(tr *http.Transport) http.RoundTripper {
		if token == "" {
			return tr
		}
		return bearer{next: tr, value: "Bearer " + token}
	}, opts)
}

// connectVia opens a client whose requests go through via(its own
// transport), for a client that adds more than a Bearer token (DPoP).
func (t *httpTarget) connectVia(ctx context.Context, via func(*http.Transport) http.RoundTripper, opts *mcp.ClientSessionOptions) (*session, error) {
	// Each session gets its own http.Transport, hence its own connections,
	// as separate clients would have.
	tr := &http.Transport{
		TLSClientConfig:     t.tls,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	rt := via(tr)
	cs, err := t.client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   t.endpoint,
		HTTPClient: &http.Client{Transport: rt},
		MaxRetries: -1, // a failure is a result, not something to hide by retrying
	}, opts)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return &session{ClientSession: cs, release: tr.CloseIdleConnections}, nil
}

func (t *httpTarget) pids() ([]int, error) {
	if len(t.procs) == 0 {
		return nil, nil
	}
	roots := make([]int, len(t.procs))
	for i, p := range t.procs {
		roots[i] = p.pid()
	}
	return t.procfs.Tree(roots...)
}

func (t *httpTarget) stop() error {
	for _, p := range append(t.procs, t.helpers...) {
		_ = p.stop(10 * time.Second)
	}
	return nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	next  http.RoundTripper
	value string
}

// RoundTrip implements http.RoundTripper on a copy of req, as the
// interface requires.
func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", b.value)
	return b.next.RoundTrip(req)
}

// vars are the placeholders of a server's arguments and environment:
// {addr}, {host} and {port} of the address the harness picked for it, and
// {issuer}, the test issuer's address, for the TLS system.
type vars map[string]string

func addrVars(addr string) vars {
	host, port, _ := net.SplitHostPort(addr)
	return vars{"addr": addr, "host": host, "port": port}
}

// expand replaces every {name} of v in each argument.
func (v vars) expand(args []string) []string {
	pairs := make([]string, 0, 2*len(v))
	for k, val := range v {
		pairs = append(pairs, "{"+k+"}", val)
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// shellQuote joins argv into one /bin/sh command line, for tools such as
// supergateway that take the worker command as a single string.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// startHTTP starts argv as a server on addr (a fresh free port when empty),
// with {addr} and the other placeholders of v expanded in argv and env, and
// waits until it listens.
func startHTTP(ctx context.Context, name, addr string, v vars, argv, env []string, logDir, scheme string) (*proc, string, error) {
	if addr == "" {
		var err error
		if addr, err = freeAddr(); err != nil {
			return nil, "", err
		}
	}
	all := addrVars(addr)
	for k, val := range v {
		all[k] = val
	}
	p, err := startProc(name, all.expand(argv), all.expand(env), filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, "", err
	}
	if err := waitReady(ctx, p, addr, 30*time.Second); err != nil {
		_ = p.stop(time.Second)
		return nil, "", err
	}
	return p, scheme + "://" + addr + "/mcp", nil
}

// waitFile waits until path exists and is not empty while p runs: how a
// test issuer says its tokens are written.
func waitFile(ctx context.Context, p *proc, path string, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return bytes.TrimSpace(b), nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("mcpbench: %s exited before writing %s (%v); see %s", p.name, path, p.err, p.log.Name())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mcpbench: %s did not write %s within %v; see %s", p.name, path, timeout, p.log.Name())
		}
	}
}

// sessionEnv is the environment of a worker started by the harness or by a
// bridge: the harness's own plus the identity contract of workerproto.Identity.
func sessionEnv(base []string, extra []string) []string {
	return append(append([]string(nil), base...), extra...)
}

// waitLog waits until p's log holds line (a prefix of one of its lines)
// while p runs: how the test issuer says every token is written.
func waitLog(ctx context.Context, p *proc, line string, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(p.log.Name()); err == nil {
			for l := range bytes.Lines(b) {
				if bytes.HasPrefix(l, []byte(line)) {
					return b, nil
				}
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("mcpbench: %s exited before saying %q (%v); see %s", p.name, line, p.err, p.log.Name())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mcpbench: %s did not say %q within %v; see %s", p.name, line, timeout, p.log.Name())
		}
	}
}

// readUserTokens reads dir's NAME.jwt files, in name order: the users
// NAME and their bearer tokens (mcpgate-testissuer --users).
func readUserTokens(dir string) (users, tokens []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jwt"))
	if err != nil {
		return nil, nil, fmt.Errorf("mcpbench: -user-tokens: %w", err)
	}
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("mcpbench: -user-tokens: %w", err)
		}
		if tok := strings.TrimSpace(string(b)); tok != "" {
			users = append(users, strings.TrimSuffix(filepath.Base(f), ".jwt"))
			tokens = append(tokens, tok)
		}
	}
	if len(users) == 0 {
		return nil, nil, fmt.Errorf("mcpbench: -user-tokens %s holds no NAME.jwt token", dir)
	}
	return users, tokens, nil
}
