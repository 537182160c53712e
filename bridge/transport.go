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

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// send posts one message and relays the answer; retry allows one new
// session after the server forgot ours (a restart).
func (b *bridge) send(ctx context.Context, line []byte, m *jsonrpc.Message, retry bool) {
	b.mu.Lock()
	sid, version, gen := b.sid, b.version, b.gen
	b.mu.Unlock()
	resp, err := b.post(ctx, line, m, sid, version)
	if err != nil {
		if ctx.Err() == nil {
			b.refuse(line, m, refusal{err: err, url: b.o.URL})
		}
		return
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound && sid != "" && m.Method != "initialize" && retry:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		b.o.Log.Info("mcpgate bridge: the server no longer knows the session (restarted?); starting a new one")
		started, err := b.reinitialize(ctx, gen)
		if err != nil {
			b.refuse(line, m, refusal{err: fmt.Errorf("starting a new session: %w", err), url: b.o.URL})
			return
		}
		if started {
			b.startStream(ctx)
		}
		b.send(ctx, line, m, false)
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
			b.o.Log.Info("mcpgate bridge: header mismatch; listing the tools and trying again")
			b.learnTools(ctx, m)
			b.send(ctx, line, m, false)
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
		b.startStream(ctx)
	}
}

// post sends one message with the token, retrying once with a refreshed
// token after a 401.
func (b *bridge) post(ctx context.Context, line []byte, m *jsonrpc.Message, sid, version string) (*http.Response, error) {
	seen := b.logins()
	var tok string
	if b.o.Token != nil {
		var err error
		if tok, err = b.o.Token(ctx); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.o.URL, bytes.NewReader(line))
		if err != nil {
			return nil, err
		}
		h := req.Header
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		if b.o.Token != nil {
			h.Set("Authorization", "Bearer "+tok)
		}
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
				b.o.Log.Info("mcpgate bridge: refreshed the token after a 401")
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
	pending := requestIDs(line, m)
	deliver := func(msg []byte) {
		msgs, batch, err := jsonrpc.DecodeBody(msg)
		if err != nil {
			b.o.Log.Warn("mcpgate bridge: dropped a message from the server that is not JSON-RPC", "status", resp.StatusCode, "bytes", len(msg))
			return
		}
		keep := make([]bool, len(msgs))
		dropped := 0
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
		}
		if dropped == 0 {
			b.write(msg)
			return
		}
		b.o.Log.Warn("mcpgate bridge: dropped answers from the server for ids this request did not send, or sent already answered", "status", resp.StatusCode, "dropped", dropped)
		if !batch {
			return
		}
		var raws []json.RawMessage
		json.Unmarshal(msg, &raws) // DecodeBody read it: the same elements
		var out [][]byte
		for i, r := range raws {
			if i < len(keep) && keep[i] {
				out = append(out, r)
			}
		}
		if len(out) > 0 {
			b.write(append(append([]byte("["), joinComma(out)...), ']'))
		}
	}
	var body []byte // a body that is not JSON-RPC, for the error's data
	switch ct {
	case "text/event-stream":
		if err := readSSE(resp.Body, b.o.MaxMessageBytes, deliver); errors.Is(err, bufio.ErrTooLong) && len(pending) > 0 {
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
	if len(pending) == 0 || ctx.Err() != nil {
		return
	}
	b.refuse(line, m, refusal{status: resp.StatusCode, statusText: resp.Status,
		challenge: strings.Join(resp.Header.Values("WWW-Authenticate"), ", "), body: body, url: b.o.URL, only: pending})
}

// requestIDs is the set of ids (by idKey) of the requests in what the
// client sent: m's, or each of a batch's.
func requestIDs(line []byte, m *jsonrpc.Message) map[string]bool {
	ids := map[string]bool{}
	if m.Method == "" && m.ID == nil { // a batch
		msgs, _, _ := jsonrpc.DecodeBody(line)
		for _, q := range msgs {
			if q.IsRequest() {
				ids[idKey(q.ID)] = true
			}
		}
		return ids
	}
	if m.IsRequest() {
		ids[idKey(m.ID)] = true
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

// readSSE calls fn with the data of each event; an event line over max
// bytes ends the stream with bufio.ErrTooLong.
func readSSE(body io.Reader, max int, fn func([]byte)) error {
	sc := bufio.NewScanner(body)
	limit := max + len("data: \r\n")
	sc.Buffer(make([]byte, min(64<<10, limit)), limit) // the larger of the two is the bound
	var data [][]byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				fn(bytes.Join(data, []byte("\n")))
				data = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			data = append(data, append([]byte(nil), d...))
		}
	}
	if len(data) > 0 {
		fn(bytes.Join(data, []byte("\n")))
	}
	return sc.Err()
}
