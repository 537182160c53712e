package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// Worker kinds: what one worker process serves.
const (
	// WorkerSession serves one MCP session (protocol 2025-11-25 and
	// earlier).
	WorkerSession = "session"
	// WorkerUser serves the stateless requests of one user and read-only
	// flag (protocol 2026-07-28).
	WorkerUser = "user"
)

// Decisions of a CallEvent.
const (
	DecisionAllowed  = "allowed"  // the request went to the worker
	DecisionReadOnly = "readOnly" // refused by the read-only rules (docs/design.md, Read-only)
	DecisionLimit    = "limit"    // refused by a limit: 408, 413, 429 or 503
	DecisionPolicy   = "policy"   // refused by auth.policies: the token does not grant the tool
	DecisionInvalid  = "invalid"  // refused before a worker as malformed: 2026-07-28 headers that contradict the body, another call's requestState
)

// Outcomes of a CallEvent besides a tool error's kind and a JSON-RPC error
// code.
const (
	OutcomeOK        = "ok"        // a result that is not a tool error
	OutcomeCancelled = "cancelled" // the client cancelled; no answer
	OutcomeRefused   = "refused"   // refused at the edge with an HTTP status
	// OutcomeInputRequired: a 2026-07-28 result asking the client for
	// input; the client's retry carries the call on.
	OutcomeInputRequired = "inputRequired"
)

// Reasons a worker exited, for Observer.WorkerExited.
const (
	ExitCrashed     = "crashed"     // it exited or was killed on its own
	ExitLimit       = "limit"       // a worker limit (worker.limits.*) stopped it
	ExitReplaced    = "replaced"    // its session moved to a worker with other rights
	ExitDeleted     = "deleted"     // the client ended the session (DELETE)
	ExitIdle        = "idle"        // idle reaping
	ExitShutdown    = "shutdown"    // the gateway stopped
	ExitStartFailed = "startFailed" // it never became usable
)

// CallEvent is one tools/call, answered, refused or cancelled, or one
// request refused by a limit: what the audit trail records and the metrics
// count. It never holds the token; Arguments are the tool's arguments as the
// client sent them, for a sink that cuts and redacts them.
type CallEvent struct {
	Time       time.Time     // when the gateway took the request
	Server     string        // Options.Server: the configured server's name; "" for the one at /mcp
	Method     string        // "tools/call", or a refused request's method ("" when its body was not read)
	User       string        // the user id the worker runs as
	ClientID   string        // the token's azp or client_id; "" in the localhost mode
	Issuer     string        // the token's iss; "" in the localhost mode
	Session    string        // the session id's first 8 characters (as in the log); "" on a per-user worker
	WorkerKey  string        // a per-user worker's instance id; "" on a session
	WorkerKind string        // WorkerSession or WorkerUser
	WorkerPid  int           // 0 when no worker was reached
	Tool       string        // params.name as the worker reads it, clipped
	ReadOnly   bool          // the request was read-only (its session or its token)
	Decision   string        // DecisionAllowed, DecisionReadOnly, DecisionPolicy, DecisionLimit or DecisionInvalid
	Status     int           // the HTTP status of a refusal at the edge; 0 otherwise
	Duration   time.Duration // from Time to the answer
	// Outcome is OutcomeOK, a tool error's structuredContent.error.kind, the
	// JSON-RPC error code in decimal ("-32603"), OutcomeCancelled or
	// OutcomeRefused.
	Outcome   string
	ErrorCode int    // the JSON-RPC error code; 0 when none
	ErrorKind string // the JSON-RPC error's data.kind (workerExited, readOnly, bufferFull…)
	// ErrorLimit is a workerExited error's data.limit: the worker limit
	// (worker.limits.<name>) that stopped the worker, when one did.
	ErrorLimit string
	// Protocol is the MCP revision the request was made under: its
	// MCP-Protocol-Version header (absent: 2025-03-26), or for an
	// initialize the revision its params ask for; clipped.
	Protocol  string
	RequestID string          // the client's request id: a string id's value, a number's digits; clipped
	Arguments json.RawMessage // params.arguments; nil when none
}

// Observer hears what the gateway does: the audit trail and the metrics.
// Its methods run on the gateway's own goroutines (a worker's reader among
// them) and must return quickly.
type Observer interface {
	// Call is told of each tools/call once, when it is settled, and of each
	// request a limit refused.
	Call(e *CallEvent)
	// WorkerStarted is told of a worker that answered its first request,
	// took after its start (or, for a pre-started worker, pooled, after
	// its claim).
	WorkerStarted(kind string, pooled bool, took time.Duration)
	// WorkerExited is told of a worker gone, with why (Exit*).
	WorkerExited(kind, reason string)
}

// NopObserver observes nothing; embed it to implement part of Observer.
type NopObserver struct{}

// Call does nothing.
func (NopObserver) Call(*CallEvent) {}

// WorkerStarted does nothing.
func (NopObserver) WorkerStarted(string, bool, time.Duration) {}

// WorkerExited does nothing.
func (NopObserver) WorkerExited(string, string) {}

// observers fans one event out to several observers.
type observers []Observer

func (os observers) Call(e *CallEvent) {
	for _, o := range os {
		o.Call(e)
	}
}

func (os observers) WorkerStarted(kind string, pooled bool, took time.Duration) {
	for _, o := range os {
		o.WorkerStarted(kind, pooled, took)
	}
}

func (os observers) WorkerExited(kind, reason string) {
	for _, o := range os {
		o.WorkerExited(kind, reason)
	}
}

// callee is what a CallEvent says about the worker a request went to:
// filled by the session path here, by the per-user worker path alike.
type callee struct {
	session   string // session id prefix, or ""
	workerKey string // per-user worker instance id, or ""
	kind      string
	pid       int
}

// calleeOf is the callee of a request refused before its body was read:
// its session, when it names one its principal owns.
func (g *Gateway) calleeOf(c *call) callee {
	if c.r.Header.Get("MCP-Protocol-Version") == modernVersion {
		return callee{kind: WorkerUser}
	}
	if sid := c.r.Header.Get("MCP-Session-Id"); sid != "" {
		if s := g.lookup(c, sid); s != nil {
			return s.callee()
		}
	}
	return callee{kind: WorkerSession}
}

// exitReason is why a worker ended (Exit*), for WorkerExited: the
// reason the gateway recorded when it stopped it, else ExitLimit when a
// worker limit stopped it, else ExitCrashed.
type exitReason struct {
	p    atomic.Pointer[string]
	conn atomic.Pointer[worker.Conn] // set once started, for its Limit
}

// set records reason unless one is recorded already.
func (x *exitReason) set(reason string) { x.p.CompareAndSwap(nil, &reason) }

func (x *exitReason) get() string { return x.getFor(x.conn.Load()) }

// getFor is get for the worker c (nil: not known).
func (x *exitReason) getFor(c *worker.Conn) string {
	if r := x.p.Load(); r != nil {
		return *r
	}
	if c != nil && c.ExitLimit() != "" {
		return ExitLimit
	}
	return ExitCrashed
}

// newEvent starts the event of request m (nil: its body was not read) of
// call c, to the worker to.
func (g *Gateway) newEvent(c *call, m *jsonrpc.Message, to callee, readOnly bool) *CallEvent {
	e := &CallEvent{
		Time: g.opts.Now(), Server: g.opts.Server, User: g.opts.LocalUser, ReadOnly: readOnly,
		Session: to.session, WorkerKey: to.workerKey, WorkerKind: to.kind, WorkerPid: to.pid,
		Decision: DecisionAllowed,
	}
	if p := c.principal; p != nil {
		e.User, e.ClientID, e.Issuer = p.UserID, p.ClientID, p.Issuer
		e.ReadOnly = e.ReadOnly || p.ReadOnly
	}
	e.Protocol, _ = protocolVersion(c.r)
	e.Protocol = clip(e.Protocol)
	if m != nil {
		e.Method, e.RequestID = clip(m.Method), idText(m.ID)
		if m.Method == "initialize" {
			if v, ok := jsonrpc.MemberString(m.Params, "protocolVersion"); ok {
				e.Protocol = clip(v)
			}
		}
		if isToolsCall(m) {
			name, _ := toolName(m.Params)
			e.Tool = clip(name)
			e.Arguments = toolArguments(m.Params)
		}
	}
	return e
}

// idText is a request id for a log: a string id's value, else the id's
// JSON text, clipped.
func idText(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return clip(s)
	}
	return clip(string(id))
}

func isToolsCall(m *jsonrpc.Message) bool { return strings.EqualFold(m.Method, "tools/call") }

// toolArguments returns params.arguments, nil when absent or unreadable.
func toolArguments(params json.RawMessage) json.RawMessage {
	if v, ok := jsonrpc.PlainMember(params, "arguments", nil); ok {
		return v
	}
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Arguments
}

// watchCall arranges for the event of tools/call m to be completed from
// its answer on st and reported: the one place every tools/call passes,
// allowed or refused, on either protocol generation.
func (g *Gateway) watchCall(e *CallEvent, m *jsonrpc.Message, st *worker.Stream) {
	st.Watch(m.ID, g.callWatcher(e))
}

// callWatcher is the Watch callback that completes e from its answer and
// reports it.
func (g *Gateway) callWatcher(e *CallEvent) func(*worker.Answer) {
	return func(a *worker.Answer) {
		e.Duration = g.opts.Now().Sub(e.Time)
		e.Outcome, e.ErrorCode, e.ErrorKind = Outcome(a)
		if e.ErrorKind == worker.KindWorkerExited {
			e.ErrorLimit = errorLimit(a)
		}
		if e.Decision == DecisionLimit {
			e.Outcome = OutcomeRefused // a limit stopped it on its way
		}
		g.observer.Call(e)
	}
}

// refusedAtEdge reports a request refused by a limit before it reached a
// worker (408, 413, 429, 503); m is nil when its body was not read.
func (g *Gateway) refusedAtEdge(c *call, m *jsonrpc.Message, to callee, readOnly bool, f failure) {
	e := g.newEvent(c, m, to, readOnly)
	e.Decision, e.Status, e.Outcome = DecisionLimit, f.status, OutcomeRefused
	e.ErrorCode = f.code
	g.observer.Call(e)
}

// refusedWith reports request m refused before a worker with decision and
// an HTTP status (a step-up challenge's 403).
func (g *Gateway) refusedWith(c *call, m *jsonrpc.Message, to callee, readOnly bool, decision string, status int) {
	if !g.observed {
		return
	}
	e := g.newEvent(c, m, to, readOnly)
	e.Decision, e.Status, e.Outcome = decision, status, OutcomeRefused
	g.observer.Call(e)
}

// refusedInvalid reports a tools/call refused before a worker because
// its 2026-07-28 headers contradict its body (f: HeaderMismatch and the
// like) or it carries another call's requestState: a tool name smuggled
// past a proxy that routes or filters on the header, or a replayed state,
// is worth an audit line.
func (g *Gateway) refusedInvalid(c *call, m *jsonrpc.Message, f failure) {
	if !g.observed || !isToolsCall(m) {
		return
	}
	e := g.newEvent(c, m, callee{kind: WorkerUser}, c.readOnly)
	e.Decision, e.Status, e.Outcome, e.ErrorCode = DecisionInvalid, f.status, OutcomeRefused, f.code
	g.observer.Call(e)
}

// isLimit reports the refusals that are limits.
func (f failure) isLimit() bool {
	switch f.status {
	case http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// Outcome reads an answer as a CallEvent's Outcome, ErrorCode and
// ErrorKind: OutcomeOK, a tool error's kind (isError with
// structuredContent.error.kind; "toolError" without one), or the JSON-RPC
// error code; the error's data.kind besides. nil is OutcomeCancelled.
//
// It runs on the worker's reader for every tools/call, so it reads only the
// members it needs, by jsonrpc.PlainMember's scan (a 1 MB result costs a
// skim, not a decode), and leaves to encoding/json only what that scan
// cannot tell (escaped or case-folded keys) and the small error objects.
func Outcome(ans *worker.Answer) (outcome string, code int, kind string) {
	if ans == nil {
		return OutcomeCancelled, 0, ""
	}
	result := ans.Result
	if ans.Data != nil {
		v, ok := members(ans.Data, "result", "error")
		if !ok {
			return outcomeDecoded(ans)
		}
		if v[1] != nil {
			var e struct {
				Code int             `json:"code"`
				Data json.RawMessage `json:"data"`
			}
			_ = json.Unmarshal(v[1], &e)
			var d struct {
				Kind string `json:"kind"`
			}
			_ = json.Unmarshal(e.Data, &d)
			return strconv.Itoa(e.Code), e.Code, clip(d.Kind)
		}
		result = v[0]
	}
	v, ok := members(result, "isError", "resultType", "structuredContent")
	if !ok {
		res := new(toolResult)
		_ = json.Unmarshal(result, res)
		return resultOutcome(res)
	}
	res := &toolResult{IsError: string(v[0]) == "true", StructuredContent: v[2]}
	_ = json.Unmarshal(v[1], &res.ResultType)
	return resultOutcome(res)
}

// outcomeDecoded is Outcome by encoding/json, for an answer the plain scan
// cannot read.
func outcomeDecoded(ans *worker.Answer) (string, int, string) {
	var a struct {
		Result *toolResult `json:"result"`
		Error  *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(ans.Data, &a)
	if a.Error != nil {
		var d struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(a.Error.Data, &d)
		return strconv.Itoa(a.Error.Code), a.Error.Code, clip(d.Kind)
	}
	return resultOutcome(a.Result)
}

// errorLimit reads a JSON-RPC error answer's data.limit.
func errorLimit(a *worker.Answer) string {
	var e struct {
		Error struct {
			Data struct {
				Limit string `json:"limit"`
			} `json:"data"`
		} `json:"error"`
	}
	if a == nil || json.Unmarshal(a.Data, &e) != nil {
		return ""
	}
	return clip(e.Error.Data.Limit)
}

// resultOutcome reads a result's outcome.
func resultOutcome(res *toolResult) (string, int, string) {
	switch {
	case res == nil:
		return OutcomeOK, 0, ""
	case res.ResultType == "input_required":
		// MCP 2026-07-28: the call goes on in the client's retry, which
		// has an event of its own.
		return OutcomeInputRequired, 0, ""
	case res.IsError:
		var sc struct {
			Error struct {
				Kind string `json:"kind"`
			} `json:"error"`
		}
		if json.Unmarshal(res.StructuredContent, &sc) == nil && sc.Error.Kind != "" {
			return clip(sc.Error.Kind), 0, ""
		}
		return "toolError", 0, ""
	}
	return OutcomeOK, 0, ""
}

// members returns the values of the named members of the object obj (valid
// JSON) in one scan, nil for those absent; false when the scan cannot tell
// them as encoding/json would (see jsonrpc.PlainMember) or obj is not an
// object.
func members(obj []byte, names ...string) ([][]byte, bool) {
	out := make([][]byte, len(names))
	_, ok := jsonrpc.PlainMember(obj, names[0], func(key, val []byte) bool {
		for i, n := range names {
			switch {
			case string(key) == n:
				if out[i] != nil {
					return false // a duplicate: encoding/json takes the last
				}
				out[i] = val
			case bytes.EqualFold(key, []byte(n)):
				return false
			}
		}
		return true
	})
	return out, ok
}

// toolResult is what Outcome reads of a result.
type toolResult struct {
	ResultType        string          `json:"resultType"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}
