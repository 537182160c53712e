package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/worker"
)

// JSON-RPC error codes (JSON-RPC 2.0 §5.1, MCP).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603
	// codeSessionNotFound is what the TypeScript SDK answers for an unknown
	// session; MCP leaves the body of that 404 open.
	codeSessionNotFound = -32001
	// codeUnsupportedProtocolVersion is the 2026-07-28 revision's
	// UnsupportedProtocolVersionError (SEP-2575).
	codeUnsupportedProtocolVersion = -32022
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
	errOriginForbidden = failure{http.StatusForbidden, codeInvalidRequest, "gateway: Origin not allowed; add it to the gateway's allowed origins", nil}
	errHostForbidden   = failure{http.StatusForbidden, codeInvalidRequest, "gateway: Host is not a loopback name on this loopback listener (DNS rebinding protection)", nil}
	errMethod          = failure{http.StatusMethodNotAllowed, codeInvalidRequest, "gateway: method not allowed; use POST, GET or DELETE", nil}
	errContentType     = failure{http.StatusUnsupportedMediaType, codeInvalidRequest, "gateway: Content-Type must be application/json", nil}
	errAcceptPOST      = failure{http.StatusNotAcceptable, codeInvalidRequest, "gateway: Accept must include application/json or text/event-stream", nil}
	errAcceptGET       = failure{http.StatusNotAcceptable, codeInvalidRequest, "gateway: Accept must include text/event-stream", nil}
	errTooLarge        = failure{http.StatusRequestEntityTooLarge, codeInvalidRequest, "gateway: request body too large", nil}
	errBodyTimeout     = failure{http.StatusRequestTimeout, codeInvalidRequest, "gateway: request body not received in time", nil}
	errBodyRead        = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: could not read the request body", nil}
	errParse           = failure{http.StatusBadRequest, codeParseError, "gateway: the body is not valid JSON", nil}
	errInvalid         = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: the body is not a JSON-RPC 2.0 message or batch", nil}
	errEmptyBatch      = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: empty batch", nil}
	errBatchVersion    = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: JSON-RPC batches exist only in protocol 2025-03-26", nil}
	errInitInBatch     = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: initialize must be sent alone, not in a batch", nil}
	errInitWithSession = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: initialize must not carry an MCP-Session-Id; it opens a new session", nil}
	errNoSession       = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: MCP-Session-Id header required; send initialize first", nil}
	errUnknownSession  = failure{http.StatusNotFound, codeSessionNotFound, "gateway: session not found or ended; initialize a new session", nil}
	errStreamConflict  = failure{http.StatusConflict, codeInvalidRequest, "gateway: this session already has a standalone stream open", nil}
	errLastEventID     = failure{http.StatusBadRequest, codeInvalidRequest, "gateway: stream resumption (Last-Event-ID) is not supported", nil}
	errTooManySessions = failure{http.StatusServiceUnavailable, codeInternalError, "gateway: too many sessions; try again later", nil}
	errTooManyForUser  = failure{http.StatusTooManyRequests, codeInternalError, "gateway: too many sessions for this user; end one (DELETE) or wait for idle ones to expire", nil}
	errWorkerStart     = failure{http.StatusBadGateway, codeInternalError, "gateway: the worker process could not be started", nil}
	errWorkerTimeout   = failure{http.StatusGatewayTimeout, codeInternalError, "gateway: the worker did not answer initialize in time", nil}
	errWorkerExited    = failure{http.StatusBadGateway, codeInternalError, "gateway: the worker exited during initialize", nil}
	errShuttingDown    = failure{http.StatusServiceUnavailable, codeInternalError, "gateway: shutting down", nil}
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
	return failure{http.StatusBadRequest, codeUnsupportedProtocolVersion,
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
	_, _ = w.Write(worker.ErrorResponse(id, worker.ErrorObject{Code: f.code, Message: f.msg, Data: f.data}))
}
