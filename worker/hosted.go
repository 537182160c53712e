package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/mcpgate/mcpgate/workerproto"
)

// ErrSessionsFull is returned by OpenSession when the worker already hosts
// as many sessions as it may.
var ErrSessionsFull = errors.New("worker: the worker hosts as many sessions as it may")

// OpenSession opens a hosted session in c's worker, which hosts sessions
// (ConnConfig.Framed): a Conn of its own, with its own requests, ids,
// progress tokens, worker requests and standalone stream, over c's
// process. Its messages travel in frames of a session number c gives it,
// so that nothing of one session reaches another, whatever ids their
// clients choose. Close ends the session alone; the worker's exit ends
// every session in it with KindWorkerExited. id is the MCP session id
// (the worker's status reports it); max bounds the sessions c hosts at
// once (0: no bound).
func (c *Conn) OpenSession(cfg ConnConfig, id string, max int) (*Conn, error) {
	if !c.framed || c.host != nil {
		return nil, errors.New("worker: OpenSession on a worker that hosts no sessions")
	}
	if cfg.Logger == nil {
		cfg.Logger = c.log
	}
	h := newConn(c.proc, c.grace, cfg)
	h.pooled, h.framed, h.host = c.pooled, true, c
	c.mu.Lock()
	switch {
	case c.closed || c.gone:
		c.mu.Unlock()
		return nil, ErrClosed
	case max > 0 && len(c.hosted) >= max:
		c.mu.Unlock()
		return nil, ErrSessionsFull
	}
	c.lastSID++
	h.session = c.lastSID
	c.hosted[h.session] = h
	c.mu.Unlock()
	// Before any message of the session: the caller has h only now.
	if err := c.proc.Send(workerproto.OpenLine(h.session, id)); err != nil {
		c.mu.Lock()
		delete(c.hosted, h.session)
		c.mu.Unlock()
		return nil, ErrClosed
	}
	return h, nil
}

// Hosted reports whether c is a session hosted in a worker that hosts
// sessions (OpenSession), not a process's own Conn.
func (c *Conn) Hosted() bool { return c.host != nil }

// Sessions returns the number of sessions c's worker hosts.
func (c *Conn) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.hosted)
}

// write sends one encoded message to the worker: in c's frame when the
// worker hosts sessions.
func (c *Conn) write(data []byte) error {
	if !c.framed {
		return c.proc.Send(data)
	}
	return c.proc.Send(workerproto.AppendFrame(make([]byte, 0, len(data)+96), c.session, data))
}

// demux takes one line of a worker that hosts sessions: a frame, whose
// message goes to the Conn of its session. A line that is not a frame,
// or names a session not open, is dropped: it belongs to no client.
func (c *Conn) demux(line []byte) {
	f, err := workerproto.ParseFrame(line)
	if err != nil {
		c.proc.Logf(slog.LevelWarn, "worker: dropped a line that is not a session frame", "bytes", len(line))
		return
	}
	if f.Session == 0 {
		c.handleMessage(f.Message, nil)
		return
	}
	c.mu.Lock()
	h := c.hosted[f.Session]
	if h != nil && f.End {
		delete(c.hosted, f.Session)
	}
	c.mu.Unlock()
	switch {
	case h == nil || f.Open != "":
		c.log.Debug("worker: dropped a message of a session that has ended", "pid", c.Pid(), "session", f.Session)
	case f.End:
		// The worker could not serve the session (its database did not
		// open): it is over, as if its worker had exited.
		h.mu.Lock()
		if h.endKind == "" {
			h.endKind = KindWorkerExited
			h.endMsg = "gateway: the worker could not serve this session (see the gateway's log); " + h.exitAdvice
		}
		h.mu.Unlock()
		h.end(nil, "")
	default:
		h.handleMessage(f.Message, nil)
	}
}

// takeHosted takes every hosted session out of c, for its end.
func (c *Conn) takeHosted() []*Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := make([]*Conn, 0, len(c.hosted))
	for _, h := range c.hosted {
		list = append(list, h)
	}
	clear(c.hosted)
	c.gone = true
	return list
}

// closeHosted ends hosted session c alone: the worker is told, c's
// requests in flight get the reason Close was given, and the process
// goes on serving the others.
func (c *Conn) closeHosted(ctx context.Context) error {
	c.host.mu.Lock()
	mine := c.host.hosted[c.session] == c
	if mine {
		delete(c.host.hosted, c.session)
	}
	c.host.mu.Unlock()
	if mine {
		_ = c.proc.Send(workerproto.EndLine(c.session))
		c.end(nil, "")
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worker: pid %d, session %d: %w", c.Pid(), c.session, ctx.Err())
	}
}

// frameHead returns the session and the start of the message of a frame
// whose start is head, as the built-in worker writes it
// (workerproto.AppendFrame), for a line over the size limit.
func frameHead(head []byte) (int64, []byte, bool) {
	const prefix = `{"jsonrpc":"2.0","method":"` + workerproto.SessionMethod + `","params":{"session":`
	rest, ok := bytes.CutPrefix(head, []byte(prefix))
	if !ok {
		return 0, nil, false
	}
	num, msg, ok := bytes.Cut(rest, []byte(`,"message":`))
	if !ok {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	return n, msg, err == nil && n >= 0
}

// tooLongFramed is tooLong for a worker that hosts sessions: the line's
// session's request fails.
func (c *Conn) tooLongFramed(head []byte, n int) {
	sid, msg, ok := frameHead(head)
	if !ok {
		c.proc.Logf(slog.LevelWarn, "worker: dropped a message over the message size limit", "bytes", n, "limit", c.proc.max)
		return
	}
	target := c
	if sid != 0 {
		c.mu.Lock()
		target = c.hosted[sid]
		c.mu.Unlock()
		if target == nil {
			return
		}
	}
	target.tooLongMessage(msg, n)
}
