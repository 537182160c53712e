package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// failure is one refusal at the HTTP edge: its status and its JSON-RPC
// error. Every refusal the gateway makes is a row in the table below, so the
// mapping from kind to status and code lives in one place.
type failure struct {
	status int
	code   int
	msg    string
	data   any
}

var (
	errOriginForbidden    = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: Origin not allowed; add it to the gateway's allowed origins", nil}
	errHostForbidden      = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: Host is not a loopback name on this loopback listener (DNS rebinding protection)", nil}
	errMethod             = failure{http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "gateway: method not allowed; use POST, GET or DELETE", nil}
	errContentType        = failure{http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, "gateway: Content-Type must be application/json", nil}
	errAcceptPOST         = failure{http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "gateway: Accept must include application/json or text/event-stream", nil}
	errAcceptGET          = failure{http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "gateway: Accept must include text/event-stream", nil}
	errTooLarge           = failure{http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, "gateway: request body too large", nil}
	errBodyTimeout        = failure{http.StatusRequestTimeout, jsonrpc.CodeInvalidRequest, "gateway: request body not received in time", nil}
	errBodyRead           = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: could not read the request body", nil}
	errParse              = failure{http.StatusBadRequest, jsonrpc.CodeParseError, "gateway: the body is not valid JSON", nil}
	errInvalid            = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: the body is not a JSON-RPC 2.0 message or batch", nil}
	errEmptyBatch         = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: empty batch", nil}
	errBatchVersion       = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: JSON-RPC batches exist only in protocol 2025-03-26", nil}
	errInitInBatch        = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: initialize must be sent alone, not in a batch", nil}
	errInitWithSession    = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: initialize must not carry an MCP-Session-Id; it opens a new session", nil}
	errNoSession          = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: MCP-Session-Id header required; send initialize first", nil}
	errUnknownSession     = failure{http.StatusNotFound, jsonrpc.CodeSessionNotFound, "gateway: session not found or ended; initialize a new session", nil}
	errDeleteReadOnly     = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: ending a read-write session needs a token with the write scope", nil}
	errDeleteNarrower     = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: this token is granted fewer tools than the session was opened with, so it may not end it; send DELETE with a token of the session's rights, or let the session expire", nil}
	errStreamConflict     = failure{http.StatusConflict, jsonrpc.CodeInvalidRequest, "gateway: this session already has a standalone stream open", nil}
	errLastEventID        = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: stream resumption (Last-Event-ID) is not supported", nil}
	errTooManySessions    = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: too many sessions; try again later", nil}
	errTooManyConnections = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: too many connections for this user; close some (reuse one connection) or try again later", nil}
	errTooManyForUser     = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: too many sessions for this user; end one (DELETE) or wait for idle ones to expire", nil}
	errWorkerStart        = failure{http.StatusBadGateway, jsonrpc.CodeInternalError, "gateway: the worker process could not be started", nil}
	errWorkerTimeout      = failure{http.StatusGatewayTimeout, jsonrpc.CodeInternalError, "gateway: the worker did not answer initialize in time", nil}
	errWorkerExited       = failure{http.StatusBadGateway, jsonrpc.CodeInternalError, "gateway: the worker exited during initialize", nil}
	errShuttingDown       = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: shutting down", nil}
	errDraining           = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: draining before a restart, no new sessions or workers; try again shortly (another replica may take it)", nil}

	// MCP 2026-07-28 (no sessions; see modern.go and stateless.go).
	errModernMethod       = failure{http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "gateway: MCP " + modernVersion + " uses POST only (GET streams and DELETE belong to sessions of 2025-11-25 and earlier)", nil}
	errModernBatch        = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: MCP " + modernVersion + " takes one JSON-RPC message per POST, not a batch", nil}
	errModernResponse     = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: MCP " + modernVersion + " clients send no JSON-RPC responses; answer an input request by retrying the original request with inputResponses", nil}
	errModernHeaderAbsent = failure{http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, "gateway: header mismatch: the body carries params._meta." + metaProtocolVersion + " but the MCP-Protocol-Version header does not name the same revision; send both, equal", nil}
	errTooManyWorkers     = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: too many sessions and workers; try again later", nil}
	errTooManyForUserW    = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: too many sessions and workers for this user; end a session (DELETE) or wait for idle ones to expire", nil}
	errWorkerStartW       = failure{http.StatusBadGateway, jsonrpc.CodeInternalError, "gateway: the worker process could not be started; try again", nil}
	errWorkerExitedW      = failure{http.StatusBadGateway, jsonrpc.CodeInternalError, "gateway: the worker has stopped; send the request again", nil}
	errTooManyListeners   = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: too many subscriptions/listen streams open for this user; close one", nil}
	errTooManyParked      = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: too many requests of this user wait for input; answer or abandon one", nil}
	errWorkerTimeoutW     = failure{http.StatusGatewayTimeout, jsonrpc.CodeInternalError, "gateway: the worker did not answer its handshake in time; try again", nil}
)

// removedMethod answers a 2026-07-28 request for a method that revision
// removed: -32601 with HTTP 404 (§Protocol Version Header).
func removedMethod(method string) failure {
	return failure{http.StatusNotFound, jsonrpc.CodeMethodNotFound, "gateway: " + quote(method) + " does not exist in MCP " + modernVersion, nil}
}

// discoverNeedsModern refuses server/discover on an older revision's
// header with the UnsupportedProtocolVersionError, so that a dual-era client
// retries on 2026-07-28.
func discoverNeedsModern(requested string) failure {
	f := unsupportedVersion(requested)
	f.msg = "gateway: server/discover exists only in MCP " + modernVersion + "; send MCP-Protocol-Version: " + modernVersion + " and that revision's params._meta"
	return f
}

// supportedVersions are the protocol revisions this transport speaks, newest
// first: 2026-07-28 without sessions, the others with.
var supportedVersions = []string{modernVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// sessionVersions are the revisions that open a session with initialize.
var sessionVersions = supportedVersions[1:]

// unsupportedVersion is the refusal of a protocol revision: the 2026-07-28
// UnsupportedProtocolVersionError (SEP-2575: HTTP 400, code -32022, data
// {supported, requested}), which a client of any era can read.
func unsupportedVersion(requested string) failure {
	requested = clip(requested)
	return failure{http.StatusBadRequest, jsonrpc.CodeUnsupportedProtocolVersion,
		"gateway: protocol version " + requested + " is not supported; supported: " + strings.Join(supportedVersions, ", "),
		struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{supportedVersions, requested}}
}

// write sends f as a JSON-RPC error response for id (nil: null).
func (f failure) write(w http.ResponseWriter, id json.RawMessage) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	switch f.status {
	case http.StatusMethodNotAllowed:
		// RFC 9110 §15.5.6: a 405 lists the allowed methods.
		if h.Get("Allow") == "" {
			h.Set("Allow", "GET, POST, DELETE")
		}
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		h.Set("Retry-After", "30")
	}
	w.WriteHeader(f.status)
	_, _ = w.Write(f.body(id))
}

// body is f's JSON-RPC error response for id.
func (f failure) body(id json.RawMessage) []byte {
	return jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: f.code, Message: f.msg, Data: f.data})
}
