// Package bridge connects an MCP client that speaks only stdio to a remote
// MCP server over Streamable HTTP, adding the bearer token the client
// cannot get itself. Messages pass through untouched in both directions
// (a JSON answer is only compacted onto one line, as stdio requires); the
// bridge reads just enough of each to route it: the id, the method, the
// session id and protocol version of the initialize answer, and the
// x-mcp-header marks of tools/list answers.
package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Options configure Run. URL and Token are required.
type Options struct {
	// URL is the server's MCP endpoint.
	URL string
	// HTTPClient reaches it; default http.DefaultClient. Give it no
	// overall Timeout: SSE answers may stream for as long as a tool runs.
	HTTPClient *http.Client
	// Token returns the access token to send (refreshing it when it is
	// about to expire).
	Token func(ctx context.Context) (string, error)
	// Refresh returns a new token after the server refused the current
	// one (401); nil means no second try.
	Refresh func(ctx context.Context) (string, error)
	// Reauthorize logs the user in again when the server still refuses
	// the token after Refresh (401), or asks for more scope (403
	// insufficient_scope: scope is the challenge's scope), and returns the
	// new token. nil (no terminal to log in on) means the request fails
	// with the server's answer and the log says what to run.
	Reauthorize func(ctx context.Context, scope string) (string, error)
	// Log gets the bridge's diagnostics; stdout is the protocol's.
	// Default: discard.
	Log *slog.Logger
	// MaxInFlight bounds concurrent requests; default 64.
	MaxInFlight int
	// MaxMessageBytes bounds one message from stdin; default 16 MiB.
	MaxMessageBytes int
}

// Run bridges in (the client's messages, one per line) and out (the
// server's, one per line) until in ends or ctx is cancelled; it then
// waits for the requests in flight, ends the session, and returns.
func Run(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	if o.URL == "" || o.Token == nil {
		return errors.New("bridge: Options.URL and Options.Token are required")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 16 << 20
	}
	b := &bridge{o: o, out: out, slots: make(chan struct{}, o.MaxInFlight)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	r := bufio.NewReaderSize(in, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(r, o.MaxMessageBytes)
		if len(bytes.TrimSpace(line)) > 0 {
			b.handle(ctx, line)
		}
		if err != nil {
			break
		}
	}
	b.wg.Wait()
	cancel() // ends the standalone stream
	b.getWG.Wait()
	b.endSession()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

var errTooLong = errors.New("bridge: a message from the client is over the size limit")

func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			// Drop the rest of it; the next line is a new message.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return nil, errTooLong
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

type bridge struct {
	o     Options
	slots chan struct{}
	wg    sync.WaitGroup
	getWG sync.WaitGroup

	outMu sync.Mutex
	out   io.Writer

	reauthMu sync.Mutex // one login at a time
	reauthed int        // logins done, so that waiting requests do not log in again

	mu      sync.Mutex
	sid     string // the session (2025 revisions)
	version string // the negotiated protocol version
	gen     int    // session generation, bumped by each (re)initialize
	init    []byte // the client's initialize request, to start a new session after a restart
	token   string

	params paramHeaders
}

// write sends one message to the client.
func (b *bridge) write(msg []byte) {
	var c bytes.Buffer
	if bytes.ContainsAny(msg, "\r\n") && json.Compact(&c, msg) == nil {
		msg = c.Bytes()
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.out.Write(append(bytes.TrimSpace(msg), '\n'))
}

func (b *bridge) fail(id json.RawMessage, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.o.Log.Warn("mcpgate bridge: " + msg)
	if id != nil {
		b.write(jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: jsonrpc.CodeInternalError, Message: "mcpgate bridge: " + msg}))
	}
}

func (b *bridge) handle(ctx context.Context, line []byte) {
	if t := bytes.TrimSpace(line); t[0] == '[' {
		// A batch (2025-03-26): sent as it is; its answers come back as one.
		b.send(ctx, t, &jsonrpc.Message{}, true)
		return
	}
	m, err := jsonrpc.Decode(line)
	if err != nil {
		b.write(jsonrpc.ErrorResponse(nil, jsonrpc.ErrorObject{Code: jsonrpc.CodeParseError, Message: "mcpgate bridge: not JSON"}))
		return
	}
	if m.Method == "initialize" {
		// The session starts before anything else is sent.
		b.mu.Lock()
		b.init = append([]byte(nil), line...)
		b.mu.Unlock()
		b.send(ctx, line, m, true)
		return
	}
	if !m.IsRequest() {
		b.send(ctx, line, m, true) // notifications and answers: quick, in order
		return
	}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() { <-b.slots }()
		b.send(ctx, line, m, true)
	}()
}

// send posts one message and relays the answer; retry allows one new
// session after the server forgot ours (a restart).
func (b *bridge) send(ctx context.Context, line []byte, m *jsonrpc.Message, retry bool) {
	b.mu.Lock()
	sid, version, gen := b.sid, b.version, b.gen
	b.mu.Unlock()
	resp, err := b.post(ctx, line, m, sid, version)
	if err != nil {
		if ctx.Err() == nil {
			b.fail(m.ID, "%s: %v", b.o.URL, err)
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
			b.fail(m.ID, "starting a new session: %v", err)
			return
		}
		if started {
			b.startStream(ctx)
		}
		b.send(ctx, line, m, false)
		return
	case resp.StatusCode == http.StatusAccepted:
		return
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
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		ch := resp.Header.Get("WWW-Authenticate")
		b.o.Log.Warn("mcpgate bridge: the server refused the token; run mcpgate login --url URL again (with the scopes it names)",
			"status", resp.StatusCode, "challenge", ch)
	}
	if m.Method == "initialize" && resp.StatusCode == http.StatusOK {
		b.mu.Lock()
		b.sid = resp.Header.Get("MCP-Session-Id")
		b.gen++
		b.mu.Unlock()
	}
	b.relay(ctx, resp, m)
	if m.Method == "initialize" && resp.StatusCode == http.StatusOK {
		b.startStream(ctx)
	}
}

// post sends one message with the token, retrying once with a refreshed
// token after a 401.
func (b *bridge) post(ctx context.Context, line []byte, m *jsonrpc.Message, sid, version string) (*http.Response, error) {
	seen := b.logins()
	tok, err := b.o.Token(ctx)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.o.URL, bytes.NewReader(line))
		if err != nil {
			return nil, err
		}
		h := req.Header
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		h.Set("Authorization", "Bearer "+tok)
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
		challenge := resp.Header.Get("WWW-Authenticate")
		insufficient := resp.StatusCode == http.StatusForbidden && strings.Contains(challenge, "insufficient_scope")
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
			if tok, err = b.reauthorize(ctx, challengeScope(challenge), seen); err != nil {
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

func (b *bridge) logins() int {
	b.reauthMu.Lock()
	defer b.reauthMu.Unlock()
	return b.reauthed
}

// reauthorize runs Reauthorize once for the requests refused together:
// one that waited while another logged in takes the new token.
func (b *bridge) reauthorize(ctx context.Context, scope string, seen int) (string, error) {
	if b.o.Reauthorize == nil {
		return "", errors.New("the server refused the token and it cannot be refreshed; run mcpgate login --url URL again")
	}
	b.reauthMu.Lock()
	defer b.reauthMu.Unlock()
	if b.reauthed != seen {
		return b.o.Token(ctx)
	}
	b.o.Log.Warn("mcpgate bridge: the server refused the token; logging in again", "scope", scope)
	tok, err := b.o.Reauthorize(ctx, scope)
	if err != nil {
		return "", fmt.Errorf("logging in again: %w", err)
	}
	b.reauthed++
	return tok, nil
}

// challengeScope is the scope parameter of a Bearer challenge.
func challengeScope(h string) string {
	i := strings.Index(h, `scope="`)
	if i < 0 {
		return ""
	}
	rest := h[i+len(`scope="`):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// requestVersion is the MCP-Protocol-Version to send: the negotiated one
// on the 2025 revisions; a 2026-07-28 request names its own in _meta.
func requestVersion(m *jsonrpc.Message, negotiated string) string {
	if negotiated != "" {
		return negotiated
	}
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	json.Unmarshal(m.Params, &p)
	return p.Meta.Version
}

// relay passes the answer to the client: one JSON message (or batch), or
// each message of an SSE stream. A refusal without a JSON-RPC body becomes
// an error answer, so the client never waits for an answer that will not
// come.
func (b *bridge) relay(ctx context.Context, resp *http.Response, m *jsonrpc.Message) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	answered := false
	deliver := func(msg []byte) {
		if a, err := jsonrpc.Decode(msg); err == nil {
			if a.IsResponse() && bytes.Equal(a.ID, m.ID) {
				answered = true
				b.observe(m, a)
			}
		}
		b.write(msg)
	}
	switch ct {
	case "text/event-stream":
		readSSE(resp.Body, deliver)
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.o.MaxMessageBytes)+1))
		if err == nil && len(bytes.TrimSpace(body)) > 0 {
			deliver(body)
		}
	}
	if !answered && m.IsRequest() && ctx.Err() == nil {
		if resp.StatusCode == http.StatusOK {
			b.fail(m.ID, "the server's answer stream ended without an answer; send the request again")
		} else if ct != "application/json" {
			b.fail(m.ID, "the server answered %s", resp.Status)
		}
	}
}

// observe learns from an answer what later requests need.
func (b *bridge) observe(req *jsonrpc.Message, ans *jsonrpc.Message) {
	switch req.Method {
	case "initialize":
		var r struct {
			Version string `json:"protocolVersion"`
		}
		if json.Unmarshal(ans.Result, &r) == nil && r.Version != "" {
			b.mu.Lock()
			b.version = r.Version
			b.mu.Unlock()
		}
	case "tools/list":
		b.params.learn(ans.Result)
	}
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

// learnTools lists the server's tools on the bridge's own account (with
// the _meta of the request that needs them, so that a 2026-07-28 server
// sees the same version and capabilities) and learns their x-mcp-header
// marks; the answers are not relayed.
func (b *bridge) learnTools(ctx context.Context, req *jsonrpc.Message) {
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(req.Params, &p)
	cursor := ""
	for page := 0; page < 20; page++ {
		params := map[string]any{}
		if p.Meta != nil {
			params["_meta"] = p.Meta
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "mcpgate-bridge-tools", "method": "tools/list", "params": params})
		if err != nil {
			return
		}
		m, _ := jsonrpc.Decode(line)
		b.mu.Lock()
		sid, version := b.sid, b.version
		b.mu.Unlock()
		resp, err := b.post(ctx, line, m, sid, version)
		if err != nil {
			return
		}
		cursor = ""
		take := func(msg []byte) {
			a, err := jsonrpc.Decode(msg)
			if err != nil || !a.IsResponse() || !bytes.Equal(a.ID, m.ID) {
				return
			}
			b.params.learn(a.Result)
			var r struct {
				NextCursor string `json:"nextCursor"`
			}
			json.Unmarshal(a.Result, &r)
			cursor = r.NextCursor
		}
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
			readSSE(resp.Body, take)
		} else if body, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.o.MaxMessageBytes))); err == nil {
			take(body)
		}
		resp.Body.Close()
		if cursor == "" {
			return
		}
	}
}

// readSSE calls fn with the data of each event.
func readSSE(body io.Reader, fn func([]byte)) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
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
}

// reinitialize starts a new session with the client's own initialize
// request (its answer is not relayed again) and notifications/initialized;
// gen makes concurrent callers start one session between them.
func (b *bridge) reinitialize(ctx context.Context, gen int) (started bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gen != gen {
		return false, nil // another request already started the new session
	}
	if b.init == nil {
		return false, errors.New("no initialize request to repeat")
	}
	m, _ := jsonrpc.Decode(b.init)
	resp, err := b.post(ctx, b.init, m, "", "")
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("initialize answered %s", resp.Status)
	}
	b.sid, b.gen = resp.Header.Get("MCP-Session-Id"), b.gen+1
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	nm, _ := jsonrpc.Decode(note)
	resp, err = b.post(ctx, note, nm, b.sid, b.version)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return true, nil
}

// startStream opens the standalone GET stream of the session for the
// server's own messages; a server without one answers 405.
func (b *bridge) startStream(ctx context.Context) {
	b.mu.Lock()
	sid, version := b.sid, b.version
	b.mu.Unlock()
	if sid == "" {
		return
	}
	b.getWG.Add(1)
	go func() {
		defer b.getWG.Done()
		tok, err := b.o.Token(ctx)
		if err != nil {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.URL, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("MCP-Session-Id", sid)
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		resp, err := b.o.HTTPClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			return
		}
		readSSE(resp.Body, b.write)
	}()
}

// endSession tells the server the session is over (DELETE).
func (b *bridge) endSession() {
	b.mu.Lock()
	sid, version := b.sid, b.version
	b.mu.Unlock()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tok, err := b.o.Token(ctx)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.o.URL, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("MCP-Session-Id", sid)
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if resp, err := b.o.HTTPClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
