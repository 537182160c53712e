package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// send posts one message and relays the answer; retry allows one new
// session after the server forgot ours (a restart).
func (b *bridge) send(ctx context.Context, line []byte, m *jsonrpc.Message, retry bool) {
	b.mu.Lock()
	sid, version, gen := b.sid, b.version, b.gen
	b.mu.Unlock()
	outer := ctx // the session's streams outlive this request
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := func() bool { return false }
	if d := b.o.ResponseTimeout; d > 0 && m.Method != "subscriptions/listen" {
		stop = time.AfterFunc(d, func() { cancel(headTimeout(d)) }).Stop
	}
	resp, err := b.post(ctx, line, m, sid, version)
	stop()
	if err != nil {
		var late headTimeout
		if errors.As(context.Cause(ctx), &late) {
			err = late
		}
		if ctx.Err() == nil || err == late {
			b.refuse(line, m, refusal{err: err, url: b.o.URL})
		}
		return
	}
	if m.IsRequest() && m.Method != "subscriptions/listen" {
		resp.Body = watchIdle(resp.Body, b.o.IdleTimeout, cancel)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound && sid != "" && m.Method != "initialize" && retry:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		b.o.Log.Info(b.prefix + ": the server no longer knows the session (restarted?); starting a new one")
		started, err := b.reinitialize(ctx, gen)
		if err != nil {
			b.refuse(line, m, refusal{err: fmt.Errorf("starting a new session: %w", err), url: b.o.URL})
			return
		}
		if started {
			b.startStream(outer)
		}
		b.send(outer, line, m, false)
		return
	case resp.StatusCode == http.StatusAccepted && !m.IsRequest():
		return // a notification or an answer, taken; a request gets one below
	case resp.StatusCode == http.StatusBadRequest && m.Method == "tools/call" && retry:
		// MCP 2026-07-28: a HeaderMismatch means the tool's x-mcp-header
		// marks are not the ones the bridge knows (the client called it
		// without listing tools through this bridge, or they changed):
		// list the tools, then send the call once more.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, int64(b.o.MaxMessageBytes)))
		if errorCode(body) == jsonrpc.CodeHeaderMismatch {
			b.o.Log.Info(b.prefix + ": header mismatch; listing the tools and trying again")
			b.learnTools(ctx, m)
			b.send(outer, line, m, false)
			return
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	if m.Method == "initialize" && resp.StatusCode == http.StatusOK {
		b.mu.Lock()
		b.sid = resp.Header.Get("MCP-Session-Id")
		b.gen++
		b.mu.Unlock()
	}
	b.relay(ctx, resp, line, m)
	if m.Method == "initialize" && resp.StatusCode == http.StatusOK {
		b.startStream(outer)
	}
}

// post sends one message with the token, retrying once with a refreshed
// token after a 401.
func (b *bridge) post(ctx context.Context, line []byte, m *jsonrpc.Message, sid, version string) (*http.Response, error) {
	seen := b.logins()
	tok, err := b.bearer(ctx)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.o.URL, bytes.NewReader(line))
		if err != nil {
			return nil, err
		}
		h := req.Header
		if err := b.setHeaders(h, tok); err != nil {
			return nil, err
		}
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			h.Set("MCP-Session-Id", sid)
		}
		if v := requestVersion(m, version); v != "" {
			h.Set("MCP-Protocol-Version", v)
		}
		if m.Method != "" {
			h.Set("Mcp-Method", m.Method)
			if n := nameOf(m.Method, m.Params); n != "" {
				h.Set("Mcp-Name", encodeValue(n))
			}
			if m.Method == "tools/call" {
				b.params.set(h, m.Params)
			}
		}
		resp, err := b.o.HTTPClient.Do(req)
		if err != nil {
			return nil, err
		}
		challenge := strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")
		insufficient := resp.StatusCode == http.StatusForbidden && oauthclient.ChallengeParam(challenge, "error") == "insufficient_scope"
		switch {
		case resp.StatusCode == http.StatusUnauthorized && attempt == 0 && b.o.Refresh != nil:
			drain(resp)
			if tok, err = b.o.Refresh(ctx); err != nil {
				if tok, err = b.reauthorize(ctx, "", seen); err != nil {
					return nil, err
				}
				attempt++ // logged in again: one last try
			} else {
				b.o.Log.Info(b.prefix + ": refreshed the token after a 401")
			}
		case (resp.StatusCode == http.StatusUnauthorized || insufficient) && attempt < 2 && b.o.Reauthorize != nil:
			drain(resp)
			if tok, err = b.reauthorize(ctx, oauthclient.ChallengeParam(challenge, "scope"), seen); err != nil {
				return nil, err
			}
			attempt = 2
		default:
			return resp, nil
		}
		seen = b.logins()
	}
}

// bearer is the access token to send, "" without Options.Token.
func (b *bridge) bearer(ctx context.Context) (string, error) {
	if b.o.Token == nil {
		return "", nil
	}
	return b.o.Token(ctx)
}

// setHeaders starts the headers of a request: Options.Header's, then the
// token's. The protocol's own are set after, so none of these replaces
// one.
func (b *bridge) setHeaders(h http.Header, tok string) error {
	if b.o.Header != nil {
		extra, err := b.o.Header()
		if err != nil {
			return err
		}
		for k, v := range extra {
			h[k] = append([]string(nil), v...)
		}
	}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

// relay passes the answer to the client: one JSON-RPC message (or batch),
// or each JSON-RPC message of an SSE stream. Anything else (an OAuth error
// object, an HTML page, an empty body, a stream that ends early) is not
// passed on; the request gets one JSON-RPC error answer instead, so the
// client never waits for an answer that will not come. Each request is
// answered once: an answer for an id the client is not waiting for here
// (another request's, a second one, one to a notification) is dropped,
// and the requests of a batch the server left unanswered get errors.
// Notifications and the client's own answers get no answer.
func (b *bridge) relay(ctx context.Context, resp *http.Response, line []byte, m *jsonrpc.Message) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	spelled := requestIDs(line, m)
	pending := make(map[string]bool, len(spelled)) // the ids still to answer
	for k := range spelled {
		pending[k] = true
	}
	junk := 0 // messages that are not JSON-RPC
	deliver := func(msg []byte) error {
		if len(bytes.TrimSpace(msg)) == 0 {
			return nil // an event without data (a priming event, a keep-alive)
		}
		msgs, batch, err := jsonrpc.DecodeBody(msg)
		if err != nil {
			if junk++; junk == 1 {
				b.o.Log.Warn(b.prefix+": dropped a message from the server that is not JSON-RPC", "status", resp.StatusCode, "bytes", len(msg))
			}
			if junk >= maxJunk {
				return errJunk
			}
			return nil
		}
		keep := make([]bool, len(msgs))
		respelled := make([][]byte, len(msgs)) // an answer with the request's own id bytes
		dropped, changed := 0, 0
		for i, a := range msgs {
			keep[i] = true
			if !a.IsResponse() {
				continue
			}
			k := idKey(a.ID)
			if !pending[k] {
				keep[i] = false
				dropped++
				continue
			}
			delete(pending, k)
			b.observe(m, a)
			// An id of equal value spelled otherwise (7.0 for 7, "\u0061"
			// for "a") goes back as the request spelled it: whoever
			// reads it (the gateway, a client) matches the bytes it sent.
			if own := spelled[k]; !bytes.Equal(bytes.TrimSpace(a.ID), own) {
				out, err := a.EncodeWithID(own)
				if err != nil {
					keep[i] = false
					dropped++
					continue
				}
				respelled[i] = out
				changed++
			}
		}
		if dropped == 0 && changed == 0 {
			b.write(msg)
			return nil
		}
		if dropped > 0 {
			b.o.Log.Warn(b.prefix+": dropped answers from the server for ids this request did not send, or sent already answered", "status", resp.StatusCode, "dropped", dropped)
		}
		if !batch {
			if keep[0] {
				b.write(respelled[0])
			}
			return nil
		}
		var raws []json.RawMessage
		json.Unmarshal(msg, &raws) // DecodeBody read it: the same elements
		var out [][]byte
		for i, r := range raws {
			switch {
			case i >= len(keep) || !keep[i]:
			case respelled[i] != nil:
				out = append(out, respelled[i])
			default:
				out = append(out, r)
			}
		}
		if len(out) > 0 {
			b.write(append(append([]byte("["), joinComma(out)...), ']'))
		}
		return nil
	}
	var body []byte // a body that is not JSON-RPC, for the error's data
	switch ct {
	case "text/event-stream":
		err := readSSE(resp.Body, b.o.MaxMessageBytes, deliver)
		if errors.Is(err, bufio.ErrTooLong) && len(pending) > 0 {
			b.refuse(line, m, refusal{status: resp.StatusCode, tooLarge: true, limit: b.o.MaxMessageBytes, only: pending})
			return
		}
	case "application/json":
		var err error
		body, err = io.ReadAll(io.LimitReader(resp.Body, int64(b.o.MaxMessageBytes)+1))
		switch {
		case len(body) > b.o.MaxMessageBytes:
			b.refuse(line, m, refusal{status: resp.StatusCode, tooLarge: true, limit: b.o.MaxMessageBytes, only: pending})
			return
		case err == nil && len(bytes.TrimSpace(body)) > 0:
			deliver(body)
		}
	}
	idle := errors.Is(context.Cause(ctx), errIdle)
	if len(pending) == 0 || (ctx.Err() != nil && !idle) {
		return
	}
	r := refusal{status: resp.StatusCode, statusText: resp.Status, contentType: ct, junk: junk > 0,
		challenge: strings.Join(resp.Header.Values("WWW-Authenticate"), ", "), body: body, url: b.o.URL, only: pending}
	if idle {
		r.idle = b.o.IdleTimeout
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		r.location = redirectTarget(resp)
	}
	b.refuse(line, m, r)
}

// headTimeout is the cause of a request cancelled by
// Options.ResponseTimeout.
type headTimeout time.Duration

func (d headTimeout) Error() string { return fmt.Sprintf("no answer within %v", time.Duration(d)) }

// Timeout marks it as a timeout, as net/http's own are.
func (headTimeout) Timeout() bool { return true }

// maxJunk is how many messages that are not JSON-RPC one answer may hold
// before the bridge stops reading it: a server sending garbage fails the
// request rather than keeping it busy.
const maxJunk = 64

var errJunk = errors.New("bridge: the answer is not JSON-RPC")

// redirectTarget is where a redirect points, as scheme://host only (its
// path and query may carry what is not for the client's eyes).
func redirectTarget(resp *http.Response) string {
	u, err := resp.Location()
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// requestIDs maps the id (by idKey) of each request in what the client
// sent (m, or each of a batch's) to the id's own bytes.
func requestIDs(line []byte, m *jsonrpc.Message) map[string][]byte {
	ids := map[string][]byte{}
	if m.Method == "" && m.ID == nil { // a batch
		msgs, _, _ := jsonrpc.DecodeBody(line)
		for _, q := range msgs {
			if q.IsRequest() {
				ids[idKey(q.ID)] = bytes.TrimSpace(q.ID)
			}
		}
		return ids
	}
	if m.IsRequest() {
		ids[idKey(m.ID)] = bytes.TrimSpace(m.ID)
	}
	return ids
}

// idKey compares ids as the client reads them rather than byte for
// byte: a server that decodes and encodes ids again writes "\u0061" as
// "a" and 1.0 as 1. A string and a number stay distinct.
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	} else if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return "r" + string(raw)
}

// errorCode is the JSON-RPC error code of an answer, or 0.
func errorCode(body []byte) int {
	var a struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(body, &a)
	return a.Error.Code
}

// readSSE calls fn with the data of each event; an event over max bytes
// (one line, or its data lines together) ends the stream with
// bufio.ErrTooLong; an error of fn's ends it with that error.
func readSSE(body io.Reader, max int, fn func([]byte) error) error {
	sc := bufio.NewScanner(body)
	limit := max + len("data: \r\n")
	sc.Buffer(make([]byte, min(64<<10, limit)), limit) // the larger of the two is the bound
	var data [][]byte
	size := 0
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if err := fn(bytes.Join(data, []byte("\n"))); err != nil {
					return err
				}
				data, size = nil, 0
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if size += len(d) + 1; size > max+1 {
				return bufio.ErrTooLong
			}
			data = append(data, append([]byte(nil), d...))
		}
	}
	// An event the stream ended inside is not dispatched (HTML Living
	// Standard §9.2.6): the connection broke, and half a message is none.
	if err := sc.Err(); err != nil || len(data) == 0 {
		return err
	}
	return io.ErrUnexpectedEOF
}
