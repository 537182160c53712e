package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"
)

// track registers a request being sent under its id, so that the
// client's notifications/cancelled can stop it; done forgets it.
func (b *bridge) track(ctx context.Context, id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	f := &inflight{cancel: cancel}
	k := idKey(id)
	b.mu.Lock()
	b.inflight[k] = f // a client that reuses an id in flight cancels the latest
	b.mu.Unlock()
	return ctx, func() {
		cancel()
		b.mu.Lock()
		if b.inflight[k] == f {
			delete(b.inflight, k)
		}
		b.mu.Unlock()
	}
}

// cancel stops the request a notifications/cancelled names: its answer
// stream is closed, and it gets no answer (MCP: a cancelled request is
// not answered). It reports whether the notification must also go to the
// server: on a session (2025 revisions) it is the cancellation, as closing
// a stream is not; without one (MCP 2026-07-28 §Cancellation) closing the
// stream is all there is, and the server would refuse the notification.
func (b *bridge) cancel(params json.RawMessage) bool {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	json.Unmarshal(params, &p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := b.inflight[idKey(p.RequestID)]; f != nil && p.RequestID != nil {
		f.cancel()
	}
	return b.sid != ""
}

// errIdle is the cause of a request cancelled by Options.IdleTimeout.
var errIdle = errors.New("bridge: the answer stalled")

// idleBody cancels its request when no byte of the body arrives for d.
type idleBody struct {
	io.ReadCloser
	t *time.Timer
	d time.Duration
}

// watchIdle returns body, cancelling with errIdle when it stalls for d; 0
// means no limit.
func watchIdle(body io.ReadCloser, d time.Duration, cancel context.CancelCauseFunc) io.ReadCloser {
	if d <= 0 {
		return body
	}
	return &idleBody{ReadCloser: body, t: time.AfterFunc(d, func() { cancel(errIdle) }), d: d}
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.t.Reset(b.d)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.t.Stop()
	return b.ReadCloser.Close()
}
