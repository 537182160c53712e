package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/bridge"
)

// StdioOptions configure Access.ServeStdio.
type StdioOptions struct {
	// Handler is the gateway's, as the socket's http.Server serves it
	// (without Guard: ServeStdio adds it).
	Handler http.Handler
	// ConnContext is the rest of the socket's http.Server.ConnContext
	// (gateway.ConnContext); nil adds nothing.
	ConnContext func(context.Context, net.Conn) context.Context
	// Admit counts the connection against its principal's share of
	// connections (gateway.AdmitConn) and reports false when it is over
	// it; nil admits every connection.
	Admit func(context.Context, *auth.Principal) bool
	// Log hears refusals and the relay's diagnostics; nil means
	// slog.Default().
	Log *slog.Logger
}

// ServeStdio serves a stdio connection until its client's input ends or
// ctx is cancelled, then closes it. Its peer is decided once, as for an
// HTTP connection (ConnContext, then the principal Guard would find); a
// peer the socket does not serve is refused with the reason, on the
// connection. The client's messages are relayed as `mcpgate bridge` relays
// them over HTTP, but in this process: each is a request to o.Handler,
// behind Guard, called directly, so that the connection costs no HTTP
// client and no second process per message.
func (a *Access) ServeStdio(ctx context.Context, c *StdioConn, o StdioOptions) {
	log := o.Log
	if log == nil {
		log = a.o.Log
	}
	defer c.Close()
	cctx := a.ConnContext(o.ConnContext)(ctx, c.Conn)
	d, _ := cctx.Value(peerKey{}).(*peerDecision)
	if d == nil || d.principal == nil {
		err := errors.New("local: the connection's peer is unknown")
		if d != nil {
			err = d.err
		}
		log.Warn("local: refused a peer on the socket", "err", err)
		c.Refuse(err.Error())
		return
	}
	if o.Admit != nil && !o.Admit(cctx, d.principal) {
		log.Warn("local: refused a connection over its principal's share", "remote", c.RemoteAddr().String())
		c.Refuse("local: this account holds every connection its share allows (limits.max_connections_per_principal); close another client")
		return
	}
	if err := c.Accept(); err != nil {
		return
	}
	// Run reads until the input ends; the daemon's shutdown ends it too.
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Now()) })
	defer stop()
	tr := &handlerTransport{h: a.Guard(o.Handler), conn: cctx, remote: c.RemoteAddr().String(), log: log}
	err := bridge.Run(cctx, c.In, c.Conn, bridge.Options{
		URL:        "http://localhost" + c.Target,
		HTTPClient: &http.Client{Transport: tr},
		Log:        log,
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		log.Info("local: a stdio connection ended", "err", err)
	}
}

// handlerTransport is an http.RoundTripper that serves each request with
// h in this process, as if it had arrived on conn's connection: its
// context carries conn's values (the peer's decision, the listener's
// connection), and its cancellation is the request's own.
type handlerTransport struct {
	h      http.Handler
	conn   context.Context
	remote string
	log    *slog.Logger
}

// connValues is a request's context with its connection's values: the
// request's own first (its cancellation), then the connection's.
type connValues struct {
	context.Context
	conn context.Context
}

func (c connValues) Value(k any) any {
	if v := c.Context.Value(k); v != nil {
		return v
	}
	return c.conn.Value(k)
}

func (t *handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The request as a server reads it (net/http's readRequest): a path,
	// not a URL; Host apart from the headers.
	in := &http.Request{
		Method: req.Method, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		URL:        &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery},
		RequestURI: req.URL.RequestURI(), Host: req.URL.Host, Header: req.Header,
		Body: req.Body, ContentLength: req.ContentLength, RemoteAddr: t.remote,
	}
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in = in.WithContext(connValues{Context: req.Context(), conn: t.conn})
	w := &responseWriter{header: http.Header{}, head: make(chan *http.Response, 1), req: req}
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					t.log.Error("local: the gateway's handler panicked", "panic", fmt.Sprint(p))
				}
				w.abort(failed)
				return
			}
			w.finish()
		}()
		t.h.ServeHTTP(w, in)
	}()
	select {
	case resp := <-w.head:
		return resp, nil
	case err := <-failed:
		return nil, err
	case <-req.Context().Done():
		return nil, context.Cause(req.Context())
	}
}

// responseWriter holds an answer until its handler flushes it or returns
// (as net/http sends a small answer whole), then streams what follows
// through a pipe to the response's body.
type responseWriter struct {
	header http.Header
	req    *http.Request
	head   chan *http.Response // the response, once

	mu       sync.Mutex
	status   int // 0 until WriteHeader
	buf      bytes.Buffer
	pw       *io.PipeWriter // set once the head has gone
	deadline time.Time
}

// maxHeld is how much of an answer is held before the head goes.
const maxHeld = 64 << 10

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 && code >= 200 {
		w.status = code
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.pw == nil {
		n, _ := w.buf.Write(p)
		if w.buf.Len() < maxHeld {
			w.mu.Unlock()
			return n, nil
		}
		w.sendHeadLocked()
	}
	pw, deadline := w.pw, w.deadline
	w.mu.Unlock()
	if w.buf.Len() > 0 {
		return len(p), w.drain(pw, deadline)
	}
	return writeBy(pw, p, deadline)
}

// drain moves what was held into the pipe; only the handler's goroutine
// writes, so buf is its alone once the head has gone.
func (w *responseWriter) drain(pw *io.PipeWriter, deadline time.Time) error {
	b := w.buf.Bytes()
	w.buf = bytes.Buffer{}
	_, err := writeBy(pw, b, deadline)
	return err
}

// writeBy writes p, failing the stream as a connection's write deadline
// does when the reader has not taken it by then.
func writeBy(pw *io.PipeWriter, p []byte, deadline time.Time) (int, error) {
	if !deadline.IsZero() {
		t := time.AfterFunc(time.Until(deadline), func() { pw.CloseWithError(os.ErrDeadlineExceeded) })
		defer t.Stop()
	}
	return pw.Write(p)
}

// Flush sends the head and what is held, and what follows as it comes.
func (w *responseWriter) Flush() {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.pw == nil {
		w.sendHeadLocked()
	}
	pw, deadline := w.pw, w.deadline
	w.mu.Unlock()
	if w.buf.Len() > 0 {
		_ = w.drain(pw, deadline)
	}
}

// SetWriteDeadline bounds each write from now on (http.ResponseController).
func (w *responseWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	return nil
}

func (w *responseWriter) sendHeadLocked() {
	pr, pw := io.Pipe()
	w.pw = pw
	resp := w.response(pr)
	resp.Header = w.header.Clone() // the handler's map stays its own
	w.head <- resp
}

func (w *responseWriter) response(body io.ReadCloser) *http.Response {
	return &http.Response{Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header, Body: body, ContentLength: -1, Request: w.req}
}

// finish ends the answer once the handler has returned.
func (w *responseWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pw != nil {
		w.pw.Close()
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	resp := w.response(io.NopCloser(bytes.NewReader(w.buf.Bytes())))
	resp.ContentLength = int64(w.buf.Len())
	w.head <- resp
}

// abort ends the answer of a handler that panicked: as a broken
// connection, to the client.
func (w *responseWriter) abort(failed chan<- error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := errors.New("local: the gateway failed the request")
	if w.pw != nil {
		w.pw.CloseWithError(err)
		return
	}
	failed <- err
}
