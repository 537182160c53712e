package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// access is how far one request may go on its session (docs/design.md, Read-only).
type access int

const (
	// readWrite: the session and the request's token are read-write.
	readWrite access = iota
	// readOnlySession: the session is read-only (the gateway is, or the
	// token that opened it lacked the write scope). Its worker knows it.
	readOnlySession
	// readOnlyRequest: the request's token lacks the write scope, on a
	// read-write session. Its worker does not know, so the gateway alone
	// holds the line: the request may read, and must not undo or end what
	// write requests did in the session.
	readOnlyRequest
)

// accessOf decides the access of call c on session s.
func (g *Gateway) accessOf(c *call, s *binding) access {
	if ro, _ := s.rights(); ro {
		return readOnlySession
	}
	if c.roToken {
		return readOnlyRequest
	}
	return readWrite
}

// readMethods are the client requests MCP defines as reads, which a
// read-only request may send to any worker besides tools/list (filtered)
// and tools/call (decided per tool). Each only asks the server for
// something: ping (§Ping); resources/list, resources/templates/list and
// resources/read (§Resources: a server exposes data, the client reads it);
// resources/subscribe and resources/unsubscribe (change notifications
// only); prompts/list and prompts/get (§Prompts: templates, filled in and
// returned); completion/complete (§Completion: suggestions for an
// argument); logging/setLevel (which log notifications this session gets);
// tasks/get, tasks/result and tasks/list (2025-11-25 §Tasks: a task's
// state and result). tasks/cancel passes in a read-only session, whose
// tasks are all reads, as notifications/cancelled does; a read-only request
// on a read-write session is refused it, since the task may be a write's
// (see undoMethods). Everything else (methods of later revisions and
// extensions, anything custom) is refused unless the operator lists it in
// Options.SafeMethods: fail-closed, as for tools. Names match exactly, as
// SDKs match them; initialize never gets here.
var readMethods = map[string]bool{
	"ping":                     true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/read":           true,
	"resources/subscribe":      true,
	"resources/unsubscribe":    true,
	"prompts/list":             true,
	"prompts/get":              true,
	"completion/complete":      true,
	"logging/setLevel":         true,
	"tasks/get":                true,
	"tasks/result":             true,
	"tasks/list":               true,
}

// undoMethods may end what another request started: allowed in a read-only
// session, refused to a read-only request on a read-write session.
var undoMethods = map[string]bool{"tasks/cancel": true}

// ReadMethods returns the methods a read-only request may always send
// besides tools/list and tools/call, sorted, for docs and validation.
func ReadMethods() []string {
	out := make([]string, 0, len(readMethods))
	for m := range readMethods {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// refuse decides one request m with access acc (not readWrite) and returns
// its refusal, or nil when it may go to the worker.
func (g *Gateway) refuse(log *slog.Logger, m *jsonrpc.Message, acc access) []byte {
	switch {
	case strings.EqualFold(m.Method, "tools/call"):
		// The name as a worker reads it; an ambiguous one is refused.
		name, ok := toolName(m.Params)
		if !ok || !g.safe[name] {
			log.Info("gateway: refused a tool in a read-only session", "tool", clip(name), "unambiguous", ok)
			return readOnlyRefusal(m.ID, clip(name))
		}
		if acc == readOnlyRequest && g.undo[name] {
			log.Info("gateway: refused a read-only token a tool that undoes a read-write session's work", "tool", name)
			return undoRefusal(m.ID, name)
		}
		return nil
	case strings.EqualFold(m.Method, "tools/list"), readMethods[m.Method], g.safeMethods[m.Method]:
		return nil
	case undoMethods[m.Method] && acc == readOnlySession:
		return nil
	}
	method := clip(m.Method)
	log.Info("gateway: refused a method in a read-only session", "method", method)
	return methodRefusal(m.ID, method)
}

// readOnlyRefusal answers a tools/call of a tool outside the read-only-safe
// set: -32601 with data.kind "readOnly", distinct from an unknown tool
// (-32602), and a message that says how to get write access
// (docs/design.md, Read-only).
func readOnlyRefusal(id json.RawMessage, tool string) []byte {
	return refusal(id, "readOnly", "tool", tool, " changes data and this session is read-only; "+
		"to use it, connect with a token that has the write scope, to a gateway that is not read-only")
}

// refuseDelete answers a read-only token's DELETE of a read-write session,
// or a narrower one's (auth.policies) of a session with more rights, and
// reports true. Ending that session discards what write requests did
// there and have not committed, so it needs the write scope: 403
// insufficient_scope naming it (MCP 2025-11-25 §Runtime Insufficient Scope
// Errors), with the authenticator's challenge when there is one.
func (g *Gateway) refuseDelete(w http.ResponseWriter, c *call, s *binding) bool {
	if _, tools := s.rights(); g.accessOf(c, s) != readOnlyRequest {
		if c.granted.covers(tools) {
			return false
		}
		// Under auth.policies, a token that grants less than the
		// session's worker holds may not end the wider token's work.
		s.log.Info("gateway: refused a narrower token's DELETE of a session")
		errDeleteNarrower.write(w, nil)
		return true
	}
	s.log.Info("gateway: refused a read-only token's DELETE of a read-write session")
	if !auth.WriteScopeRequired(w, c.r, "ending a read-write session needs the write scope; send DELETE with a token that has it, or let the session expire") {
		errDeleteReadOnly.write(w, nil)
	}
	return true
}

// undoRefusal answers a read-only request's tools/call, on a read-write
// session, of a tool that would discard or end the work write requests did
// there (the built-in abort): safe in a read-only session, where there is
// nothing to undo, but not for a token that may not write.
func undoRefusal(id json.RawMessage, tool string) []byte {
	return refusal(id, "readOnly", "tool", tool, " would undo the work of this read-write session and this request's token is read-only; "+
		"to use it, send it with a token that has the write scope")
}

// methodRefusal answers a read-only request for a method MCP does not
// define as a read and the operator has not vouched for.
func methodRefusal(id json.RawMessage, method string) []byte {
	return refusal(id, "readOnly", "method", method, " is not known to be read-only and this request is read-only; "+
		"use a token with the write scope, or have the operator list the method in worker.safe_methods")
}

// refusal is the gateway's -32601 answer to a tool or method it will not
// forward: the message names what (what, as a JSON string) and says why and
// what to do; data carries the kind and the name (what is "tool" or
// "method"), already clipped by the caller.
func refusal(id json.RawMessage, kind, what, name, why string) []byte {
	return jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{
		Code:    jsonrpc.CodeMethodNotFound,
		Message: "gateway: " + what + " " + quote(name) + why,
		Data:    map[string]string{"kind": kind, what: name},
	})
}

func quote(s string) string {
	b, _ := jsonrpc.Marshal(s)
	return string(b)
}

// filterTools keeps only read-only-safe tools in a tools/list result.
func (g *Gateway) filterTools(result json.RawMessage) json.RawMessage {
	return keepTools(result, func(name string) bool { return g.safe[name] })
}

// keepTools keeps only the tools keep accepts in a tools/list result. Every
// other member of the result (nextCursor, _meta, …) passes unchanged. A
// result it cannot read becomes an empty list: fail closed.
func keepTools(result json.RawMessage, keep func(string) bool) json.RawMessage {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(res["tools"], &tools)
	kept := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &named) == nil && keep(named.Name) {
			kept = append(kept, t)
		}
	}
	res["tools"], _ = jsonrpc.Marshal(kept)
	out, err := jsonrpc.Marshal(res)
	if err != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	return out
}
