package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
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

	// plain is set when Decode read the message on its fast path (see
	// decodeFast): every member is then exactly as it would be encoded, so
	// the message can be written by appending its members' bytes rather
	// than by encoding/json. A copy with another member than its id is made
	// by WithParams or WithResult, which clear it.
	plain bool
}

// Errors of Validate and DecodeBody.
var (
	// ErrParse marks text that is not JSON (JSON-RPC 2.0 §5.1: -32700).
	ErrParse = errors.New("jsonrpc: not JSON")
	// ErrInvalidMessage marks a message that is JSON but not a JSON-RPC 2.0
	// request, notification or response (-32600).
	ErrInvalidMessage = errors.New("jsonrpc: not a JSON-RPC 2.0 message")
	// ErrEmptyBatch marks an empty array (JSON-RPC 2.0 §6: -32600).
	ErrEmptyBatch = errors.New("jsonrpc: empty batch")
)

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

// Marshal is json.Marshal without HTML escaping, so that "<", ">" and "&" in
// what a client or worker sent pass through byte for byte rather than as
// \u003c and the like.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// Decode reads one JSON-RPC message. The common message (an object whose
// members are among jsonrpc, id, method, params, result and error, each
// spelled exactly and present once, with no line break) is read by a scan of
// its top level only and written out again by appending its members' bytes
// (see Encode), not by encoding/json, which would re-validate and compact
// every raw member; its fields then alias data, which the caller must not
// change. Anything else (duplicates, keys differing in case or spelled with
// escapes, other members, a method that is not plain ASCII, line breaks,
// which must not reach the newline-delimited worker pipe or an SSE line) is
// decoded by encoding/json as before and behaves exactly as it always did:
// re-encoded on the way out. Errors are encoding/json's (a *json.SyntaxError
// for text that is not JSON); the caller still calls Validate. Either way
// every member of the message is valid JSON, which PlainMember relies on.
func Decode(data []byte) (*Message, error) {
	if ok, breaks := validLines(data); ok && !breaks {
		if m, ok := decodeFast(data); ok {
			return m, nil
		}
	}
	m := new(Message)
	if err := json.Unmarshal(data, m); err != nil {
		return nil, err
	}
	return m, nil
}

// A DecodeError is DecodeBody's error. Err is ErrParse, ErrInvalidMessage or
// ErrEmptyBatch; ID is the id of the message at fault when it decoded but
// failed Validate (JSON-RPC 2.0 §5 answers with it), else nil.
type DecodeError struct {
	Err error
	ID  json.RawMessage
}

func (e *DecodeError) Error() string { return e.Err.Error() }

// Unwrap returns Err, for errors.Is.
func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeBody reads what one HTTP body or one stdio line may hold: one
// message, or a batch (a JSON array, JSON-RPC 2.0 §6) of them, each decoded
// by Decode and checked by Validate. It stops at the first message at fault.
// The messages alias data, as Decode's do.
func DecodeBody(data []byte) (msgs []*Message, batch bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '[' {
		m, err := decodeValid(data)
		if err != nil {
			return nil, false, err
		}
		return []*Message{m}, false, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, true, decodeError(err)
	}
	if len(raws) == 0 {
		return nil, true, &DecodeError{Err: ErrEmptyBatch}
	}
	msgs = make([]*Message, 0, len(raws))
	for _, raw := range raws {
		m, err := decodeValid(raw)
		if err != nil {
			return nil, true, err
		}
		msgs = append(msgs, m)
	}
	return msgs, true, nil
}

// decodeValid is Decode then Validate, with DecodeBody's errors.
func decodeValid(data []byte) (*Message, error) {
	m, err := Decode(data)
	if err != nil {
		return nil, decodeError(err)
	}
	if m.Validate() != nil {
		return nil, &DecodeError{Err: ErrInvalidMessage, ID: m.ID}
	}
	return m, nil
}

// decodeError sorts an encoding/json error: a syntax error means the text is
// not JSON, anything else (a number where an object belongs) that it is not
// JSON-RPC.
func decodeError(err error) *DecodeError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DecodeError{Err: ErrParse}
	}
	return &DecodeError{Err: ErrInvalidMessage}
}

// Encode returns m as it goes on the wire. A message Decode read on its fast
// path is written member by member, in the order and with the bytes that
// encoding/json would produce for it except that params, result and error
// keep the whitespace they came with (encoding/json would compact them).
func (m *Message) Encode() ([]byte, error) {
	if !m.plain {
		return Marshal(m)
	}
	n := len(`{"jsonrpc":"2.0"}`) + len(m.ID) + len(m.Method) + len(m.Params) + len(m.Result) + len(m.Error) + 48
	b := make([]byte, 0, n)
	b = append(b, `{"jsonrpc":"2.0"`...)
	b = appendMember(b, `,"id":`, m.ID)
	if m.Method != "" {
		b = append(append(append(b, `,"method":"`...), m.Method...), '"')
	}
	b = appendMember(b, `,"params":`, m.Params)
	b = appendMember(b, `,"result":`, m.Result)
	b = appendMember(b, `,"error":`, m.Error)
	return append(b, '}'), nil
}

func appendMember(b []byte, key string, val json.RawMessage) []byte {
	if len(val) == 0 {
		return b // omitempty
	}
	return append(append(b, key...), val...)
}

// EncodeWithID returns m on the wire with id in place of its own.
func (m *Message) EncodeWithID(id json.RawMessage) ([]byte, error) {
	out := *m
	out.ID = id
	return out.Encode()
}

// AnswerInPlace writes m, an answer Decode read from a line at the tail of
// own (a buffer that holds that line alone, and that the caller owns), with
// id in place of its own, into own itself, and returns it: the same bytes as
// EncodeWithID, without copying the result. The head up to the result is
// written over what comes before the result in own (the worker's head and
// the free room before the line), and a '}' after it. It reports false,
// changing nothing, unless m is a result read on Decode's fast path and its
// last member, and the head fits. m and the line must not be used after it
// reported true: their bytes are overwritten.
func (m *Message) AnswerInPlace(own []byte, id json.RawMessage) ([]byte, bool) {
	if !m.plain || m.Method != "" || m.Params != nil || m.Error != nil || len(m.Result) == 0 || len(id) == 0 {
		return nil, false
	}
	// Where the result starts in own: it aliases own, being a slice of line.
	at := cap(own) - cap(m.Result)
	if at < 0 || at+len(m.Result) > len(own) || &own[at] != &m.Result[0] {
		return nil, false
	}
	end := at + len(m.Result)
	rest := bytes.TrimSpace(own[end:])
	if len(rest) != 1 || rest[0] != '}' {
		return nil, false // a member after the result (the id, say)
	}
	const before, after = `{"jsonrpc":"2.0","id":`, `,"result":`
	start := at - len(before) - len(id) - len(after)
	if start < 0 {
		return nil, false
	}
	copy(own[start:], before)
	copy(own[start+len(before):], id)
	copy(own[start+len(before)+len(id):], after)
	own[end] = '}'
	return own[start : end+1], true
}

// WithParams returns a copy of m with params in place of its own.
func (m *Message) WithParams(params json.RawMessage) *Message {
	out := *m
	out.plain, out.Params = false, params
	return &out
}

// WithResult returns a copy of m with result in place of its own.
func (m *Message) WithResult(result json.RawMessage) *Message {
	out := *m
	out.plain, out.Result = false, result
	return &out
}

// Own gives m its own copy of the members that point into the buffer Decode
// read, so that m may outlive it (a message read through encoding/json owns
// its members already).
func (m *Message) Own() {
	if m.plain {
		m.ID, m.Params = bytes.Clone(m.ID), bytes.Clone(m.Params)
		m.Result, m.Error = bytes.Clone(m.Result), bytes.Clone(m.Error)
	}
}
