package jsonrpc

import "encoding/json"

// The error codes mcpgate answers with: the whole table, for the gateway, the
// worker connection and the built-in worker alike.
const (
	// JSON-RPC 2.0 §5.1.
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeSessionNotFound is what the TypeScript SDK answers for an unknown
	// session; MCP leaves the body of that 404 open.
	CodeSessionNotFound = -32001
	// CodeHeaderMismatch is the 2026-07-28 revision's HeaderMismatchError
	// (§Server Validation; renumbered from -32001 in its changelog).
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability is the 2026-07-28 revision's
	// MissingRequiredClientCapabilityError (renumbered from -32003).
	CodeMissingRequiredClientCapability = -32021
	// CodeUnsupportedProtocolVersion is the 2026-07-28 revision's
	// UnsupportedProtocolVersionError (SEP-2575; renumbered from -32004).
	CodeUnsupportedProtocolVersion = -32022
)

// ErrorObject is a JSON-RPC error object.
type ErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// ErrorResponse encodes a JSON-RPC error response for id (nil means null).
func ErrorResponse(id json.RawMessage, e ErrorObject) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := Marshal(errorResponse{"2.0", id, e})
	if err != nil {
		// Only an unencodable Data can fail; drop it rather than the answer.
		e.Data = nil
		b, _ = Marshal(errorResponse{"2.0", id, e})
	}
	return b
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   ErrorObject     `json:"error"`
}
