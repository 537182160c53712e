package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

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
	b.o.Log.Warn(b.prefix+": the server refused the token; logging in again", "scope", scope)
	tok, err := b.o.Reauthorize(ctx, scope)
	if err != nil {
		return "", fmt.Errorf("logging in again: %w", err)
	}
	b.reauthed++
	return tok, nil
}

// requestVersion is the MCP-Protocol-Version to send: the negotiated one
// on the 2025 revisions; a 2026-07-28 request names its own in _meta.
func requestVersion(m *jsonrpc.Message, negotiated string) string {
	if negotiated != "" {
		return negotiated
	}
	// The gateway's own reader of members: no decoding of the whole
	// params (a tool call's arguments) per request, and the member the
	// gateway will compare the header with.
	meta, ok := jsonrpc.Member(m.Params, "_meta")
	if !ok || meta == nil {
		return ""
	}
	v, _ := jsonrpc.MemberString(meta, "io.modelcontextprotocol/protocolVersion")
	return v
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
		tok, err := b.bearer(ctx)
		if err != nil {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.URL, nil)
		if err != nil {
			return
		}
		if err := b.setHeaders(req.Header, tok); err != nil {
			b.o.Log.Warn(b.prefix+": no standalone stream", "err", err)
			return
		}
		req.Header.Set("Accept", "text/event-stream")
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
		junk := 0
		err = readSSE(resp.Body, b.o.MaxMessageBytes, func(msg []byte) error {
			if len(bytes.TrimSpace(msg)) == 0 {
				return nil
			}
			msgs, _, err := jsonrpc.DecodeBody(msg)
			if err != nil {
				if junk++; junk == 1 {
					b.o.Log.Warn(b.prefix+": dropped a message from the server that is not JSON-RPC", "bytes", len(msg))
				}
				if junk >= maxJunk {
					return errJunk
				}
				return nil
			}
			for _, a := range msgs {
				// Answers come on the request's own POST; the bridge
				// resumes no stream, so one here answers nothing the
				// client is waiting for on it.
				if a.IsResponse() {
					b.o.Log.Warn(b.prefix+": dropped an answer on the session's stream", "bytes", len(msg))
					return nil
				}
			}
			b.write(msg)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			b.o.Log.Warn(b.prefix+": the session's standalone stream ended", "err", err)
		}
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
	tok, err := b.bearer(ctx)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.o.URL, nil)
	if err != nil {
		return
	}
	if err := b.setHeaders(req.Header, tok); err != nil {
		b.o.Log.Warn(b.prefix+": the session was not ended", "err", err)
		return
	}
	req.Header.Set("MCP-Session-Id", sid)
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if resp, err := b.o.HTTPClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
