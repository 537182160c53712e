package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/workerproto"
)

// NewSession readies one hosted session, whose MCP session id is id: it
// returns what serves the session over in and out (SessionHost.Serve,
// with the session's own database connection), and what closes that
// connection when the session is over.
type NewSession func(ctx context.Context, id string) (serve func(ctx context.Context, in io.Reader, out io.Writer) error, closeFn func(), err error)

// maxFrameLine bounds one inbound frame: a message of maxFrame and the
// frame around it.
const maxFrameLine = maxFrame + 1024

// ServeSessions runs a worker that hosts sessions
// (workerproto.Identity.Sessions) until in ends or ctx is cancelled: every
// line of in is a frame (workerproto.ParseFrame); session 0's messages go
// to own, the worker's own server (its 2026-07-28 requests), and each
// other session's to what newSession readies at the session's open frame,
// which the session's end (an end frame, or in ending) closes. Everything a server writes goes out in its session's frame, so
// that one session's messages never reach another's client. A line that
// is not a frame is dropped and logged: only the gateway writes to in,
// and a client's bytes are only ever a frame's message.
func ServeSessions(ctx context.Context, own *mcp.Server, newSession NewSession, in io.Reader, out io.Writer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: out}
	h := &hosting{ctx: ctx, w: w, newSession: newSession, log: logger, sessions: map[int64]*hostedSession{}}
	ownR, ownW := io.Pipe()
	ownDone := make(chan error, 1)
	go func() { ownDone <- Serve(ctx, own, ownR, &frameWriter{w: w}) }()
	r := bufio.NewReaderSize(in, 64<<10)
	var readErr error
	for {
		line, err := readFrameLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			h.take(line, ownW)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	ownW.Close()
	h.closeAll()
	h.wg.Wait()
	if err := <-ownDone; err != nil {
		return err
	}
	return readErr
}

// hosting is ServeSessions' state.
type hosting struct {
	ctx        context.Context
	w          *lockedWriter
	newSession NewSession
	log        *slog.Logger
	sessions   map[int64]*hostedSession // nil value: a session that could not start
	wg         sync.WaitGroup
}

type hostedSession struct {
	in *io.PipeWriter
}

// take handles one frame.
func (h *hosting) take(line []byte, own *io.PipeWriter) {
	f, err := workerproto.ParseFrame(line)
	if err != nil {
		h.log.Warn("mcpgate worker: dropped a line that is not a session frame", "err", err)
		return
	}
	if f.Session == 0 {
		_, _ = own.Write(append(f.Message, '\n'))
		return
	}
	s, known := h.sessions[f.Session]
	switch {
	case f.End:
		if s != nil {
			s.in.Close()
		}
		delete(h.sessions, f.Session)
		return
	case f.Open != "":
		if known {
			h.log.Warn("mcpgate worker: dropped a second open of a session", "session", f.Session)
			return
		}
		h.start(f.Session, f.Open)
		return
	case s == nil:
		// Not open, or it could not start (the gateway has been told).
		h.log.Debug("mcpgate worker: dropped a message of a session not open", "session", f.Session)
		return
	}
	if _, err := s.in.Write(append(f.Message, '\n')); err != nil {
		h.log.Debug("mcpgate worker: a hosted session has stopped reading", "session", f.Session)
	}
}

// start starts session n's server; on failure it tells the gateway (an
// end frame) and remembers n as failed.
func (h *hosting) start(n int64, id string) *hostedSession {
	serve, closeFn, err := h.newSession(h.ctx, id)
	if err != nil {
		h.log.Warn("mcpgate worker: a hosted session could not start", "err", err)
		h.sessions[n] = nil
		_, _ = h.w.Write(append(workerproto.EndLine(n), '\n'))
		return nil
	}
	pr, pw := io.Pipe()
	s := &hostedSession{in: pw}
	h.sessions[n] = s
	h.wg.Go(func() {
		defer closeFn()
		defer pr.Close()
		if err := serve(h.ctx, pr, &frameWriter{w: h.w, session: n}); err != nil {
			h.log.Warn("mcpgate worker: a hosted session failed", "err", err)
		}
	})
	return s
}

// closeAll ends every session: the input has ended.
func (h *hosting) closeAll() {
	for n, s := range h.sessions {
		if s != nil {
			s.in.Close()
		}
		delete(h.sessions, n)
	}
}

// frameWriter writes each line a server writes (one message and its
// newline per Write, as the SDK's transport and Serve's filter write
// them) in its session's frame.
type frameWriter struct {
	w       *lockedWriter
	session int64
}

func (f *frameWriter) Write(p []byte) (int, error) {
	msg := bytes.TrimRight(p, "\n")
	line := workerproto.AppendFrame(make([]byte, 0, len(msg)+96), f.session, msg)
	if _, err := f.w.Write(append(line, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close does nothing: the worker's stdout outlives the session.
func (f *frameWriter) Close() error { return nil }

// readFrameLine reads one line without its newline; a line over
// maxFrameLine is drained and returned truncated, which ParseFrame then
// refuses.
func readFrameLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxFrameLine {
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimSuffix(line, []byte("\n")), err
		}
	}
}
