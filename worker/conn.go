package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Error kinds in error.data.kind of the errors a Conn produces.
const (
	KindWorkerExited = "workerExited"    // the worker process died
	KindSessionEnded = "sessionEnded"    // DELETE, idle reaping or shutdown
	KindNoStream     = "noStream"        // no client stream to deliver a worker request to
	KindTooLarge     = "messageTooLarge" // the worker's answer was over its process's MaxLineBytes
)

// ErrUnknownResponse is returned by Respond for a client response whose id
// names no request the worker sent.
var ErrUnknownResponse = errors.New("worker: response to a request the worker did not send or already answered")

// ErrClosed is returned for messages sent to a Conn whose worker has gone.
var ErrClosed = errors.New("worker: the session's worker has stopped")

// Conn is the gateway's JSON-RPC connection to one worker process. Many
// requests may be in flight at once: every client request id is replaced by
// a number unique for this worker and restored on the answer, and every
// request the worker sends the client gets a gateway id too, so answers route
// back. No lock is held while waiting for the worker.
type Conn struct {
	proc  *Process
	log   *slog.Logger
	grace time.Duration

	mu         sync.Mutex
	nextID     int64
	calls      map[int64]*call            // gateway id → client request in flight
	byClient   map[string]int64           // client id key → gateway id, for notifications/cancelled
	progress   map[string]int64           // progress token key → gateway id
	outReqs    map[string]json.RawMessage // id key shown to the client → the worker's own id
	workerOut  map[string]string          // the worker's id key → id key shown to the client
	standalone *Stream
	closed     bool
	endKind    string // why the Conn ended, once closed
	endMsg     string
	endLimit   string // the worker limit that ended it, if one did

	done   chan struct{}
	onExit func()
	onNote func(*jsonrpc.Message) bool
	onIdle func()

	uniqueProgress bool

	exitAdvice string

	pooled bool // the worker came from the launcher's pool

	// A worker that hosts sessions (ConnConfig.Framed) frames every
	// message (workerproto.SessionMethod). Its process's own Conn has
	// session 0 and keeps the hosted sessions' Conns, which share its
	// process and have host set (hosted.go).
	framed  bool
	session int64
	host    *Conn
	hosted  map[int64]*Conn // the process's Conn: its hosted sessions, under mu
	lastSID int64
	gone    bool // the process's Conn: its worker has gone, no session opens
}

// Pooled reports whether the worker was pre-started (LauncherOptions.PoolSize)
// rather than started for its session.
func (c *Conn) Pooled() bool { return c.pooled }

type call struct {
	clientID json.RawMessage
	key      string          // jsonrpc.Key(clientID)
	token    string          // progress token key, if any
	orig     json.RawMessage // the client's progress token, when the worker was given a unique one
	stream   *Stream
	rewrite  func(result json.RawMessage) json.RawMessage
}

// ConnConfig configures NewConn.
type ConnConfig struct {
	Logger    *slog.Logger  // protocol problems; nil means slog.Default()
	StopGrace time.Duration // SIGTERM to SIGKILL; 0 means 5s
	OnExit    func()        // called once, when the worker has gone, before its requests are settled
	// OnNotification, when set, sees each notification of the worker's own
	// first; true means it took the message, which is then not routed.
	OnNotification func(*jsonrpc.Message) bool
	// OnIdle, when set, is called on the worker's reader each time it has
	// handled every message the worker has written so far: what the
	// worker sent at one moment (questions it asks in parallel) can then
	// be answered together.
	OnIdle func()
	// UniqueProgress gives each request's progress token a value unique on
	// this worker on the way in, and restores the client's on the way out:
	// for a worker shared by several clients, whose tokens may collide.
	UniqueProgress bool
	// ExitAdvice ends the message of the workerExited error: what the
	// client should do. Empty means "the session has ended, initialize a
	// new one".
	ExitAdvice string
	// Framed says that the worker hosts sessions (workerproto.Identity
	// Sessions): every line, either way, is a frame. OpenSession then
	// opens a session in it.
	Framed bool
}

// NewConn starts reading p's messages. The Conn owns p from now on.
func NewConn(p *Process, cfg ConnConfig) *Conn {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 5 * time.Second
	}
	c := newConn(p, cfg.StopGrace, cfg)
	c.framed = cfg.Framed
	if c.framed {
		c.hosted = make(map[int64]*Conn)
	}
	go c.run()
	return c
}

// newConn is a Conn over p configured by cfg, not yet reading: a
// process's own (NewConn) or a session hosted in it (OpenSession).
func newConn(p *Process, grace time.Duration, cfg ConnConfig) *Conn {
	return &Conn{
		proc:      p,
		log:       cfg.Logger,
		grace:     grace,
		calls:     make(map[int64]*call),
		byClient:  make(map[string]int64),
		progress:  make(map[string]int64),
		outReqs:   make(map[string]json.RawMessage),
		workerOut: make(map[string]string),
		done:      make(chan struct{}),
		onExit:    cfg.OnExit,
		onNote:    cfg.OnNotification,
		onIdle:    cfg.OnIdle,

		uniqueProgress: cfg.UniqueProgress,

		exitAdvice: cmp.Or(cfg.ExitAdvice, "the session has ended, initialize a new one"),
	}
}

// Pid returns the worker's process id.
func (c *Conn) Pid() int { return c.proc.Pid() }

// Done is closed once the worker has gone and every request was settled.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Call forwards request m to the worker. Its answer, with the client's id
// restored and passed through rewrite when that is non-nil and the answer is
// a result, goes to s, as do messages the router picks s for. rewrite runs
// in s.Take, not on the worker's reader. The caller has counted the request
// with s.Expect. progressToken is the jsonrpc.Key of
// params._meta.progressToken, or empty.
func (c *Conn) Call(m *jsonrpc.Message, progressToken string, s *Stream, rewrite func(json.RawMessage) json.RawMessage) {
	// The marker is the worker's to set: a client's would reach a worker
	// that echoes its request's _meta, and name another client's call.
	m, _ = takeMarker(m)
	cl := &call{clientID: m.ID, key: jsonrpc.Key(m.ID), token: progressToken, stream: s, rewrite: rewrite}
	c.mu.Lock()
	if c.closed {
		kind, msg, limit := c.endKind, c.endMsg, c.endLimit
		c.mu.Unlock()
		s.Answer(m.ID, exitError(m.ID, msg, kind, limit))
		return
	}
	c.nextID++
	gid := c.nextID
	if progressToken != "" && c.uniqueProgress {
		if out, orig, ok := uniqueProgressToken(m, gid); ok {
			m, cl.orig = out, orig
			cl.token = jsonrpc.Key(json.RawMessage(strconv.Quote(progressPrefix + strconv.FormatInt(gid, 10))))
			progressToken = cl.token
		}
	}
	c.calls[gid] = cl
	c.byClient[cl.key] = gid
	if progressToken != "" {
		c.progress[progressToken] = gid
	}
	c.mu.Unlock()

	data, err := m.EncodeWithID(strconv.AppendInt(nil, gid, 10))
	if err == nil {
		err = c.write(data)
	}
	// A failed send means the worker is going; run settles the call then.
	if err != nil {
		c.log.Debug("worker: send failed", "pid", c.Pid(), "err", err)
	}
}

// Notify forwards a client notification. notifications/cancelled has its
// requestId rewritten to the gateway's id, and the cancelled request is
// settled without an answer (MCP §Cancellation: the receiver should not
// answer it).
func (c *Conn) Notify(m *jsonrpc.Message) error {
	if m.Method == "notifications/cancelled" {
		var ok bool
		if m, ok = c.rewriteCancel(m); !ok {
			return nil // nothing in flight by that id: nothing to cancel
		}
	}
	return c.send(m)
}

func (c *Conn) rewriteCancel(m *jsonrpc.Message) (*jsonrpc.Message, bool) {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params["requestId"] == nil {
		return nil, false
	}
	c.mu.Lock()
	gid, ok := c.byClient[jsonrpc.Key(params["requestId"])]
	var cl *call
	if ok {
		cl = c.calls[gid]
		c.forgetLocked(gid, cl)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	cl.stream.forget()
	params["requestId"] = strconv.AppendInt(nil, gid, 10)
	p, _ := jsonrpc.Marshal(params)
	return m.WithParams(p), true
}

// Respond forwards a client's answer to a request the worker sent it
// (sampling, elicitation, roots), with the worker's own id restored.
func (c *Conn) Respond(m *jsonrpc.Message) error {
	wid, ok := c.takeOutReq(jsonrpc.Key(m.ID))
	if !ok {
		return ErrUnknownResponse
	}
	data, err := m.EncodeWithID(wid)
	if err != nil {
		return fmt.Errorf("worker: encode: %w", err)
	}
	if err := c.write(data); err != nil {
		return ErrClosed
	}
	return nil
}

func (c *Conn) send(m *jsonrpc.Message) error {
	data, err := m.Encode()
	if err != nil {
		return fmt.Errorf("worker: encode: %w", err)
	}
	if err := c.write(data); err != nil {
		return ErrClosed
	}
	return nil
}

// Listen makes s the session's standalone stream. It reports false when
// another live standalone stream exists (the go-sdk answers that with 409).
func (c *Conn) Listen(s *Stream) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		s.end()
		return true
	}
	if c.standalone != nil && c.standalone.live() {
		return false
	}
	c.standalone = s
	return true
}

// Unlisten removes s as the standalone stream, if it still is.
func (c *Conn) Unlisten(s *Stream) {
	c.mu.Lock()
	if c.standalone == s {
		c.standalone = nil
	}
	c.mu.Unlock()
	s.Detach()
}

// EndListen ends the standalone stream, if one is open: its response
// finishes cleanly, and the client may open another. The gateway calls it
// when it drains, before it stops the worker.
func (c *Conn) EndListen() {
	c.mu.Lock()
	s := c.standalone
	c.standalone = nil
	c.mu.Unlock()
	if s != nil {
		s.end()
	}
}

// InFlight returns the number of client requests awaiting an answer.
func (c *Conn) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// Close stops the worker (SIGTERM, then SIGKILL after the grace period) and
// waits until every request has been settled; kind and msg say why, to the
// clients whose requests were still in flight.
func (c *Conn) Close(ctx context.Context, kind, msg string) error {
	c.mu.Lock()
	if c.endKind == "" {
		c.endKind, c.endMsg = kind, msg
	}
	c.mu.Unlock()
	if c.host != nil {
		return c.closeHosted(ctx)
	}
	err := c.proc.Stop(ctx, c.grace)
	select {
	case <-c.done:
		return err
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("worker: pid %d: %w", c.Pid(), ctx.Err()))
	}
}

func (c *Conn) forgetLocked(gid int64, cl *call) {
	delete(c.calls, gid)
	if c.byClient[cl.key] == gid {
		delete(c.byClient, cl.key)
	}
	if cl.token != "" && c.progress[cl.token] == gid {
		delete(c.progress, cl.token)
	}
}

// ExitLimit is Limit without the wait, for ConnConfig.OnExit (which runs
// before the end Limit waits for): the limit that stopped the worker, ""
// when none did or the gateway stopped it.
func (c *Conn) ExitLimit() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endLimit
}

// Limit names the worker limit that stopped the worker (LimitMemory and
// the rest), or "" when none did; it waits for the end.
func (c *Conn) Limit() string {
	<-c.done
	if c.host != nil {
		return c.ExitLimit() // the process may live on
	}
	return c.proc.Limit()
}
