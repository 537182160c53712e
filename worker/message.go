package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Message is one JSON-RPC 2.0 message with only the members the gateway reads
// decoded; params, result and error pass through as raw JSON, so anything a
// worker or a client puts there (sampling, elicitation, tasks, …) survives.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// ErrInvalidMessage marks a message that is JSON but not a JSON-RPC 2.0
// request, notification or response.
var ErrInvalidMessage = errors.New("worker: not a JSON-RPC 2.0 message")

// IsRequest reports whether m is a request (a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification (a method, no id).
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m is a response (no method).
func (m *Message) IsResponse() bool { return m.Method == "" }

// Validate checks the JSON-RPC 2.0 shape: version "2.0"; a request id is a
// string or a number (JSON-RPC 2.0 §4; MCP forbids null); a response carries
// exactly one of result and error.
func (m *Message) Validate() error {
	if m.JSONRPC != "2.0" {
		return ErrInvalidMessage
	}
	if m.Method != "" {
		if m.Result != nil || m.Error != nil {
			return ErrInvalidMessage
		}
		if m.ID != nil && !validID(m.ID) {
			return ErrInvalidMessage
		}
		return nil
	}
	if (m.Result == nil) == (m.Error == nil) || m.ID == nil {
		return ErrInvalidMessage
	}
	return nil
}

// validID reports whether raw is a JSON string or number.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// Key returns a comparable form of a JSON id or token (compacted raw JSON),
// so that 1 and "1" stay distinct and whitespace does not matter.
func Key(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if bytes.IndexAny(raw, " \t\r\n") < 0 {
		return string(raw)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// Encode is json.Marshal without HTML escaping, so that "<", ">" and "&" in
// what a client or worker sent pass through byte for byte rather than as
// \u003c and the like.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

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
	b, err := Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   ErrorObject     `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		// Only an unencodable Data can fail; drop it rather than the answer.
		e.Data = nil
		b, _ = Encode(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   ErrorObject     `json:"error"`
		}{"2.0", id, e})
	}
	return b
}

// ToolName reads the tool name of a tools/call's params the way a worker
// does: the member named exactly "name". It reports ok only when the name is
// unambiguous: one member whose key equals "name" ignoring case, spelled
// exactly so, holding a string. encoding/json matches struct fields without
// regard to case and keeps the last duplicate, while SDKs match exactly, so
// {"name":"write","Name":"echo"} would otherwise pass the gateway's
// read-only check as echo and run as write.
func ToolName(params json.RawMessage) (name string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(params))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := t.(string)
		if !strings.EqualFold(key, "name") {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return "", false
			}
			continue
		}
		if seen || key != "name" || dec.Decode(&name) != nil {
			return "", false
		}
		seen = true
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return "", false
	}
	return name, seen
}

// requestParams is what the gateway reads from a request's params: the
// progress token (MCP §Progress) and, for tools/call, the tool name.
type requestParams struct {
	Name string `json:"name"`
	Meta struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

// ParamsInfo returns the tool name (tools/call) and the progress token key of
// a request's params; both are empty when absent or unreadable.
func ParamsInfo(params json.RawMessage) (name, progressToken string) {
	if len(params) == 0 {
		return "", ""
	}
	var p requestParams
	if json.Unmarshal(params, &p) != nil {
		return "", ""
	}
	if p.Meta.ProgressToken != nil && !bytes.Equal(bytes.TrimSpace(p.Meta.ProgressToken), []byte("null")) {
		progressToken = Key(p.Meta.ProgressToken)
	}
	return p.Name, progressToken
}
