package tools

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/tools/db"
)

// SessionHost serves the hosted sessions of a worker that hosts sessions
// (ServeSessions) with one MCP server: every session of the worker has
// the same identity (user, read-only flag, grant), so its tools are
// registered once, and each call runs with its own session's Env (its MCP
// session id and database connection), found by the SDK session it came
// in. What the SDK keeps per session (the initialize exchange, the log
// level, subscriptions, requests in flight and their cancellation) stays
// the session's.
type SessionHost struct {
	srv  *mcp.Server
	base Env
	mu   sync.Mutex
	envs map[*mcp.ServerSession]*Env
}

// NewSessionHost returns the host of sessions of opts' identity (its DB
// and Transactions are unused: each session brings its own connection)
// over a database of engine.
func NewSessionHost(opts Options, engine string) (*SessionHost, error) {
	sets, err := Lookup(opts.Toolsets)
	if err != nil {
		return nil, err
	}
	impl := implementation(opts)
	srv, logger := newMCPServer(&impl, opts.Logger)
	h := &SessionHost{srv: srv, base: Env{User: opts.User, ReadOnly: opts.ReadOnly, Server: impl}, envs: map[*mcp.ServerSession]*Env{}}
	maxBytes := opts.MaxResultBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResultBytes
	}
	for _, ts := range sets {
		for i := range ts.Tools {
			t := &ts.Tools[i]
			if granted(t, opts) && hostServes(t, true, engine, false) {
				srv.AddTool(t.mcpTool(), handler(t, h.envOf, maxBytes, logger))
			}
		}
	}
	return h, nil
}

// envOf is the Env of the session a call came in.
func (h *SessionHost) envOf(req *mcp.CallToolRequest) *Env {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.envs[req.Session]
}

// Serve serves one session, whose MCP session id is id, over d, reading
// in and writing out as Serve does, until in ends or ctx is cancelled.
func (h *SessionHost) Serve(ctx context.Context, id string, d *db.Session, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	defer pr.Close()
	ss, err := h.srv.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: w}, nil)
	if err != nil {
		return err
	}
	env := h.base
	env.SessionID, env.DB = id, d
	h.mu.Lock()
	h.envs[ss] = &env
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.envs, ss)
		h.mu.Unlock()
	}()
	// Only now does the session's input flow: its Env is there for its
	// first call.
	go filterFrames(in, pw, w)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return nil
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
}
