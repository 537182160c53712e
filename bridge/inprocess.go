package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// HandlerTransport is an http.RoundTripper that serves each request with
// a handler in this process, as if it had arrived on one connection of
// that handler's server: for Options.HTTPClient when the bridge runs
// beside the gateway (the local mode's daemon), so that a message costs
// no HTTP client, no socket and no parsing of HTTP.
type HandlerTransport struct {
	// Handler serves each request.
	Handler http.Handler
	// Conn holds the values of the connection the requests stand for, as
	// http.Server.ConnContext would give them; each request's context
	// has them, and its cancellation is the request's own.
	Conn context.Context
	// RemoteAddr is each request's RemoteAddr.
	RemoteAddr string
	// Log hears a handler's panic; nil means slog.Default().
	Log *slog.Logger
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

// RoundTrip serves req with Handler, returning once the answer is
// complete, flushed, or over 64 KiB; the rest streams.
func (t *HandlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The request as a server reads it (net/http's readRequest): a path,
	// not a URL; Host apart from the headers.
	in := &http.Request{
		Method: req.Method, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		URL:        &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery},
		RequestURI: req.URL.RequestURI(), Host: req.URL.Host, Header: req.Header,
		Body: req.Body, ContentLength: req.ContentLength, RemoteAddr: t.RemoteAddr,
	}
	if in.Body == nil {
		in.Body = http.NoBody
	}
	conn := t.Conn
	if conn == nil {
		conn = context.Background()
	}
	in = in.WithContext(connValues{Context: req.Context(), conn: conn})
	w := &responseWriter{header: http.Header{}, head: make(chan *http.Response, 1), req: req}
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					log := t.Log
					if log == nil {
						log = slog.Default()
					}
					log.Error("bridge: the handler panicked", "panic", fmt.Sprint(p))
				}
				w.abort(failed)
				return
			}
			w.finish()
		}()
		t.Handler.ServeHTTP(w, in)
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
	err := errors.New("bridge: the handler failed the request")
	if w.pw != nil {
		w.pw.CloseWithError(err)
		return
	}
	failed <- err
}
