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
	errOriginForbidden = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: Origin not allowed; add it to the gateway's allowed origins", nil}
	errHostForbidden   = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: Host is not a loopback name on this loopback listener (DNS rebinding protection)", nil}
	errMethod          = failure{http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "gateway: method not allowed; use POST, GET or DELETE", nil}
	errContentType     = failure{http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, "gateway: Content-Type must be application/json", nil}
	errAcceptPOST      = failure{http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "gateway: Accept must include application/json or text/event-stream", nil}
	errAcceptGET       = failure{http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "gateway: Accept must include text/event-stream", nil}
	errTooLarge        = failure{http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, "gateway: request body too large", nil}
	errBodyTimeout     = failure{http.StatusRequestTimeout, jsonrpc.CodeInvalidRequest, "gateway: request body not received in time", nil}
	errBodyRead        = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: could not read the request body", nil}
	errParse           = failure{http.StatusBadRequest, jsonrpc.CodeParseError, "gateway: the body is not valid JSON", nil}
	errInvalid         = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: the body is not a JSON-RPC 2.0 message or batch", nil}
	errEmptyBatch      = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: empty batch", nil}
	errBatchVersion    = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: JSON-RPC batches exist only in protocol 2025-03-26", nil}
	errInitInBatch     = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: initialize must be sent alone, not in a batch", nil}
	errInitWithSession = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: initialize must not carry an MCP-Session-Id; it opens a new session", nil}
	errNoSession       = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: MCP-Session-Id header required; send initialize first", nil}
	errUnknownSession  = failure{http.StatusNotFound, jsonrpc.CodeSessionNotFound, "gateway: session not found or ended; initialize a new session", nil}
	errDeleteReadOnly  = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: ending a read-write session needs a token with the write scope", nil}
	errStreamConflict  = failure{http.StatusConflict, jsonrpc.CodeInvalidRequest, "gateway: this session already has a standalone stream open", nil}
	errLastEventID     = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: stream resumption (Last-Event-ID) is not supported", nil}
	errTooManySessions = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: too many sessions; try again later", nil}
	errTooManyForUser  = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: too many sessions for this user; end one (DELETE) or wait for idle ones to expire", nil}
	errWorkerStart     = failure{http.StatusBadGateway, jsonrpc.CodeInternalError, "gateway: the worker process could not be started", nil}
	errWorkerTimeout   = failure{http.StatusGatewayTimeout, jsonrpc.CodeInternalError, "gateway: the worker did not answer initialize in time", nil}
	errWorkerExited    = failure{http.StatusBadGateway, jsonrpc.CodeInternalError, "gateway: the worker exited during initialize", nil}
	errShuttingDown    = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: shutting down", nil}
	errDraining        = failure{http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "gateway: draining before a restart, no new sessions; try again shortly (another replica may take it)", nil}
)

// supportedVersions are the protocol revisions this transport speaks, newest
// first.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// unsupportedVersion is the refusal of a protocol revision. For a 2026-07-28
// client it is that revision's UnsupportedProtocolVersionError (SEP-2575:
// HTTP 400, code -32022, data {supported, requested}), on which the client
// falls back to initialize on 2025-11-25; the go-sdk's stateful handler
// answers the same.
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
		h.Set("Allow", "GET, POST, DELETE")
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		h.Set("Retry-After", "30")
	}
	w.WriteHeader(f.status)
	_, _ = w.Write(jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: f.code, Message: f.msg, Data: f.data}))
}
