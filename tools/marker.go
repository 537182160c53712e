package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/workerproto"
)

// Over stdio nothing ties a request or notification the worker sends
// during a call to that call (the gateway may have several of one user's
// calls in flight on this worker). The worker therefore marks what it sends
// during a call with the call's JSON-RPC id, in params._meta under
// workerproto.MetaRequest; the gateway routes by it and removes it.
//
// The go-sdk does not hand a handler its request's id, so the frame filter
// writes the id into the request's own _meta on the way in (markRequest),
// the receiving middleware moves it from there into the handler's context,
// and the sending middleware puts it on everything sent with that context.

// markedMethods are the requests during which a server may send the client
// something of its own.
var markedMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// markRequest returns the JSON-RPC line with its id written into
// params._meta[workerproto.MetaRequest], for a request of markedMethods; any
// other line as it is. A client's own value under that key is replaced, so
// that no client can make the worker name another call.
func markRequest(line []byte) []byte {
	m, err := jsonrpc.Decode(line)
	if err != nil || !m.IsRequest() || !markedMethods[m.Method] || !validMarkerID(m.ID) {
		return line
	}
	params, ok := withMarker(m.Params, m.ID)
	if !ok {
		return line
	}
	out, err := m.WithParams(params).Encode()
	if err != nil {
		return line
	}
	return out
}

// validMarkerID reports whether id is a number the gateway could have
// given (its ids are positive integers); a marker is only for those.
func validMarkerID(id json.RawMessage) bool {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64)
	return err == nil && n > 0
}

// withMarker returns params with _meta[workerproto.MetaRequest] set to id.
// Params with no _meta, or a plain _meta without the key (what the gateway
// sends), get it spliced in without decoding the arguments; anything else
// is decoded and encoded again.
func withMarker(params json.RawMessage, id json.RawMessage) (json.RawMessage, bool) {
	member := `"` + workerproto.MetaRequest + `":` + string(id)
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return json.RawMessage(`{"_meta":{` + member + `}}`), true
	}
	meta, plain := jsonrpc.PlainMember(params, "_meta", nil)
	if plain && meta == nil {
		i := bytes.IndexByte(params, '{')
		if i < 0 {
			return nil, false
		}
		rest := bytes.TrimSpace(params[i+1:])
		sep := ","
		if len(rest) > 0 && rest[0] == '}' {
			sep = ""
		}
		return concat(params[:i+1], `"_meta":{`+member+`}`+sep, params[i+1:]), true
	}
	if plain && len(meta) > 0 && meta[0] == '{' {
		if v, ok := jsonrpc.PlainMember(meta, workerproto.MetaRequest, nil); ok && v == nil {
			// meta is a subslice of params: its '{' sits at this offset.
			at := cap(params) - cap(meta)
			if at >= 0 && at < len(params) && params[at] == '{' {
				sep := ","
				if rest := bytes.TrimSpace(meta[1:]); len(rest) > 0 && rest[0] == '}' {
					sep = ""
				}
				return concat(params[:at+1], member+sep, params[at+1:]), true
			}
		}
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return nil, false
	}
	var mm map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok && json.Unmarshal(raw, &mm) != nil {
		return nil, false // _meta that is no object: the SDK refuses the request anyway
	}
	if mm == nil {
		mm = map[string]json.RawMessage{}
	}
	mm[workerproto.MetaRequest] = id
	var err error
	if p["_meta"], err = jsonrpc.Marshal(mm); err != nil {
		return nil, false
	}
	out, err := jsonrpc.Marshal(p)
	return out, err == nil
}

func concat(a []byte, mid string, b []byte) json.RawMessage {
	out := make([]byte, 0, len(a)+len(mid)+len(b))
	return append(append(append(out, a...), mid...), b...)
}

// MarkCalls makes srv mark what it sends during a call with the call's id
// (the id Serve writes into the call's _meta): for a go-sdk server served
// by Serve that sends the client something of its own during a call.
func MarkCalls(srv *mcp.Server) {
	srv.AddReceivingMiddleware(takeMarkerMiddleware)
	srv.AddSendingMiddleware(putMarkerMiddleware)
}

// callKey is the context key of the id of the call a handler serves.
type callKey struct{}

// takeMarkerMiddleware moves the call's id from the request's _meta into
// the handler's context.
func takeMarkerMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if markedMethods[method] {
			if p := req.GetParams(); p != nil {
				if meta := p.GetMeta(); meta != nil {
					if id, ok := meta[workerproto.MetaRequest]; ok {
						delete(meta, workerproto.MetaRequest)
						ctx = context.WithValue(ctx, callKey{}, id)
					}
				}
			}
		}
		return next(ctx, method, req)
	}
}

// putMarkerMiddleware marks what the server sends during a call (a log
// message, progress, a sampling or elicitation request) with the call's id.
func putMarkerMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if id := ctx.Value(callKey{}); id != nil {
			if p := req.GetParams(); p != nil {
				meta := p.GetMeta()
				if meta == nil {
					meta = map[string]any{}
				}
				meta[workerproto.MetaRequest] = id
				p.SetMeta(meta)
			}
		}
		return next(ctx, method, req)
	}
}
