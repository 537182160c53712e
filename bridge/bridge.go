// Package bridge connects an MCP client that speaks only stdio to a remote
// MCP server over Streamable HTTP: for a person's MCP client, adding the
// bearer token the client cannot get itself (mcpgate bridge); for the
// gateway, as the worker of a remote server, adding the server's own
// headers (mcpgate upstream). Messages pass through untouched in both directions
// (a JSON answer is only compacted onto one line, as stdio requires); the
// bridge reads just enough of each to route it: the id, the method, the
// session id and protocol version of the initialize answer, and the
// x-mcp-header marks of tools/list answers.
package bridge

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Options configure Run. URL is required.
type Options struct {
	// URL is the server's MCP endpoint.
	URL string
	// HTTPClient reaches it; default http.DefaultClient. Give it no
	// overall Timeout: SSE answers may stream for as long as a tool runs.
	HTTPClient *http.Client
	// Token returns the access token to send (refreshing it when it is
	// about to expire); nil sends no Authorization header of the bridge's
	// own.
	Token func(ctx context.Context) (string, error)
	// Header returns headers to add to every request (a remote server's
	// static credential, HeadersFile.Header); nil adds none. They never
	// replace a header of the protocol. An error fails the request it
	// was read for, with the error's text: it must not hold a value.
	Header func() (http.Header, error)
	// Server, when set, makes Run the gateway's worker for the remote
	// server of that name (mcpgate upstream): its errors name the server,
	// their hints speak to the gateway's users and operator rather than
	// of logging in, nothing names the URL to the client, and requests
	// still in flight when the input ends are cancelled (the gateway
	// closed the worker's stdin and waits for no answer).
	Server string
	// ResponseTimeout fails a request whose answer has not begun (its
	// HTTP head) this long after it was sent; 0 means no limit. A
	// subscriptions/listen request is exempt: a server may start that
	// stream with its first notification.
	ResponseTimeout time.Duration
	// IdleTimeout fails a request whose answer, once begun, sends no
	// byte for this long; 0 means no limit. A subscriptions/listen
	// stream and the session's standalone stream are exempt: they are
	// quiet by nature.
	IdleTimeout time.Duration
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
	// MaxInputBytes, when set, bounds a message from stdin instead (a
	// bridge beside the gateway: the gateway's own bound on a body), so
	// that MaxMessageBytes bounds only the server's answers.
	MaxInputBytes int
}

// Run bridges in (the client's messages, one per line) and out (the
// server's, one per line) until in ends or ctx is cancelled; it then
// waits for the requests in flight (with Options.Server, cancels them),
// ends the session, and returns.
func Run(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	if o.URL == "" {
		return errors.New("bridge: Options.URL is required")
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
	b := &bridge{o: o, out: out, slots: make(chan struct{}, o.MaxInFlight), inflight: map[string]*inflight{}}
	b.prefix = "mcpgate bridge"
	if o.Server != "" {
		b.prefix = "mcpgate upstream"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	r := bufio.NewReaderSize(in, 64<<10)
	maxIn := cmp.Or(o.MaxInputBytes, o.MaxMessageBytes)
	var err error
	for {
		var line []byte
		line, err = readLine(r, maxIn)
		if errors.Is(err, errTooLong) {
			// One message too large fails that request, not the bridge.
			b.refuseTooLong(line, maxIn)
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			b.handle(ctx, line)
		}
		if err != nil {
			break
		}
	}
	if o.Server != "" {
		cancel() // the gateway waits for no answer once it closed stdin
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

// readLine reads one line of at most max bytes. A longer one is read to
// its end and dropped; errTooLong comes with its first max bytes, where
// the request's id usually is.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			line = append(line, chunk[:max-len(line)]...)
			// Drop the rest of it; the next line is a new message.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return line, err
			}
			return line, errTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// refuseTooLong answers a message over the size limit with an error for
// its id, found in its first bytes (JSON-RPC 2.0 §5: null when it cannot
// be found there); a notification gets no answer.
func (b *bridge) refuseTooLong(prefix []byte, max int) {
	id, method, answer := leadingMembers(prefix)
	b.o.Log.Warn(b.prefix+": a message from the client is over the size limit; refused", "limit", max, "method", method)
	if (method != "" && id == nil) || answer {
		return // a notification, or the client's own answer
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b.write(jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("%s: the message is over the limit of %d bytes", b.prefix, max),
		Data:    refusalData{Hint: "send less in one request (split the data, or pass a file path)"}}))
}

// leadingMembers reads the id and method of a JSON object that may be cut
// off, and whether it is an answer (result or error): the members before
// the cut, in order, token by token.
func leadingMembers(prefix []byte) (id json.RawMessage, method string, answer bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	for dec.More() {
		k, err := dec.Token()
		if name, _ := k.(string); err != nil || strings.EqualFold(name, "result") || strings.EqualFold(name, "error") {
			return id, method, err == nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return id, method, false
		}
		// As encoding/json reads the whole message: keys fold case, and
		// the last of duplicates wins.
		name, _ := k.(string)
		switch {
		case strings.EqualFold(name, "id"):
			id = nil
			switch {
			case v[0] == '"':
				id = v
			case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
				// A number that ends where the prefix ends may go on
				// past the cut: 12 read as 1 would answer another request.
				if dec.InputOffset() < int64(len(prefix)) {
					id = v
				}
			}
		case strings.EqualFold(name, "method"):
			method = ""
			json.Unmarshal(v, &method)
		}
	}
	return id, method, false
}

type bridge struct {
	o      Options
	prefix string // of messages and log lines: the command's name
	slots  chan struct{}
	wg     sync.WaitGroup
	getWG  sync.WaitGroup

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

	inflight map[string]*inflight // the requests being sent, by idKey; under mu
}

// inflight is one request being sent, for notifications/cancelled to
// cancel.
type inflight struct{ cancel context.CancelFunc }

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

func (b *bridge) handle(ctx context.Context, line []byte) {
	if t := bytes.TrimSpace(line); t[0] == '[' {
		// A batch (2025-03-26): sent as it is; its answers come back as one.
		b.send(ctx, t, &jsonrpc.Message{}, true)
		return
	}
	m, err := jsonrpc.Decode(line)
	if err != nil {
		b.write(jsonrpc.ErrorResponse(nil, jsonrpc.ErrorObject{Code: jsonrpc.CodeParseError, Message: b.prefix + ": not JSON"}))
		return
	}
	if m.Method == "notifications/cancelled" && !b.cancel(m.Params) {
		return // no session: closing the request's stream was the cancellation
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
	ctx, done := b.track(ctx, m.ID)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() { <-b.slots }()
		defer done()
		b.send(ctx, line, m, true)
	}()
}
