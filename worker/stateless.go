package worker

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// CancelStream gives up on every request of s still in flight: each is
// settled without an answer and the worker gets notifications/cancelled
// with its gateway id (MCP 2026-07-28 §Cancellation: a closed response
// stream cancels its request).
func (c *Conn) CancelStream(s *Stream) {
	for range c.cancelCalls(s) {
		s.forget()
	}
}

// Abandon is CancelStream for a stream whose request the gateway has
// already answered itself (an input request, a refusal): the worker's call
// is cancelled and forgotten, the stream is left as it is.
func (c *Conn) Abandon(s *Stream) {
	c.cancelCalls(s)
}

// cancelCalls forgets the calls of s and sends the worker
// notifications/cancelled for each; it returns their gateway ids.
func (c *Conn) cancelCalls(s *Stream) []int64 {
	c.mu.Lock()
	var gids []int64
	for gid, cl := range c.calls {
		if cl.stream == s {
			gids = append(gids, gid)
			c.forgetLocked(gid, cl)
		}
	}
	c.mu.Unlock()
	for _, gid := range gids {
		params := `{"requestId":` + strconv.FormatInt(gid, 10) + `,"reason":"the client closed its stream"}`
		_ = c.send(&jsonrpc.Message{JSONRPC: "2.0", Method: "notifications/cancelled", Params: []byte(params)})
	}
	return gids
}

// Retarget moves the request in flight on stream from to stream to, under
// the client id id: the answer to a request whose first HTTP response has
// ended (an input_required result the gateway made) goes to the retry's
// stream. It reports false when from has no request in flight.
func (c *Conn) Retarget(from, to *Stream, id json.RawMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for gid, cl := range c.calls {
		if cl.stream != from {
			continue
		}
		if c.byClient[cl.key] == gid {
			delete(c.byClient, cl.key)
		}
		cl.stream, cl.clientID, cl.key = to, id, jsonrpc.Key(id)
		c.byClient[cl.key] = gid
		return true
	}
	return false
}

// Refuse answers a request of the worker's own, named by the key the
// client would have answered it by, with a JSON-RPC error, as if no
// client could take it.
func (c *Conn) Refuse(key, msg string) {
	if wid, ok := c.takeOutReq(key); ok {
		_ = c.write(internalError(wid, msg, KindNoStream))
	}
}

// progressPrefix starts the progress tokens a Conn with UniqueProgress
// gives its worker.
const progressPrefix = "mcpgate-progress-"

// uniqueProgressToken returns m with params._meta.progressToken replaced
// by one unique to gid, and the client's token. ok is false when params or
// _meta is not a plain object (m is then sent as it is).
func uniqueProgressToken(m *jsonrpc.Message, gid int64) (out *jsonrpc.Message, orig json.RawMessage, ok bool) {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return m, nil, false
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil {
		return m, nil, false
	}
	// A key spelled otherwise ("ProgressToken") is one a worker that
	// folds case (encoding/json) reads as the token: it goes, and the
	// worker is given the one unique token whatever it reads.
	for k, v := range meta {
		if k != "progressToken" && strings.EqualFold(k, "progressToken") {
			if meta["progressToken"] == nil {
				orig = v
			}
			delete(meta, k)
		}
	}
	if meta["progressToken"] != nil {
		orig = meta["progressToken"]
	}
	if orig == nil {
		return m, nil, false
	}
	meta["progressToken"] = json.RawMessage(strconv.Quote(progressPrefix + strconv.FormatInt(gid, 10)))
	b, err := jsonrpc.Marshal(meta)
	if err != nil {
		return m, nil, false
	}
	params["_meta"] = b
	p, err := jsonrpc.Marshal(params)
	if err != nil {
		return m, nil, false
	}
	return m.WithParams(p), orig, true
}

// restoreProgressToken puts the client's token back into a progress
// notification.
func restoreProgressToken(m *jsonrpc.Message, orig json.RawMessage) *jsonrpc.Message {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return m
	}
	params["progressToken"] = orig
	p, err := jsonrpc.Marshal(params)
	if err != nil {
		return m
	}
	return m.WithParams(p)
}

// takeOutReq removes the worker's request the client knows by key and
// returns the worker's own id for it.
func (c *Conn) takeOutReq(key string) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wid, ok := c.outReqs[key]
	if ok {
		delete(c.outReqs, key)
		delete(c.workerOut, jsonrpc.Key(wid))
	}
	return wid, ok
}

// modernMetaPrefix starts the _meta keys MCP 2026-07-28 defines.
const modernMetaPrefix = "io.modelcontextprotocol/"

// StripModernMeta returns params without the io.modelcontextprotocol/ keys
// of params._meta (and without _meta when nothing else is left in it): the
// request as a 2025-11-25 client would send it, for a worker that speaks
// only that revision on the session the gateway initialized. ok is false
// when there was nothing to strip, or params could not be read (then params
// is returned as it is).
func StripModernMeta(params json.RawMessage) (out json.RawMessage, ok bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params, false
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta == nil {
		return params, false
	}
	stripped := false
	for k := range meta {
		if strings.HasPrefix(k, modernMetaPrefix) {
			delete(meta, k)
			stripped = true
		}
	}
	if !stripped {
		return params, false
	}
	if len(meta) == 0 {
		delete(p, "_meta")
	} else if p["_meta"], ok = marshal(meta); !ok {
		return params, false
	}
	if out, ok = marshal(p); !ok {
		return params, false
	}
	return out, true
}

func marshal(v any) (json.RawMessage, bool) {
	b, err := jsonrpc.Marshal(v)
	return b, err == nil
}
