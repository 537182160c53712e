package workerproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A worker that hosts sessions (Identity.Sessions) serves many MCP
// sessions of one key in one process: every 2025-11-25 session of one
// user, read-only flag and grant, beside the key's MCP 2026-07-28
// requests. Its stdin and stdout then carry frames, one a line, in both
// directions:
//
//	{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":3,"open":"<MCP session id>"}}
//	{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":3,"message":{...}}}
//	{"jsonrpc":"2.0","method":"mcpgate/session","params":{"session":3,"end":true}}
//
// session names the MCP session a message belongs to, by a number the
// gateway gives it (never a byte a client sent): 0 is the worker's own
// channel (the key's 2026-07-28 requests, and the gateway's own), 1 and up
// a hosted 2025-11-25 session. open, from the gateway, begins a hosted
// session and names its MCP session id (what its status reports). end
// ends a hosted session: from the gateway, the session is over (its
// client ended it, or it was idle too long); from the worker, it could not
// serve the session (say, its database connection failed to open).
//
// After the identity every line is a frame, on either side: a client's
// message is only ever the message member of a frame the gateway wrote,
// so that no message of a client's, however it is spelled, can be read as
// a frame. ParseFrame is as strict as ParseIdentityLine.
const SessionMethod = "mcpgate/session"

// MaxSession bounds the session numbers of a frame.
const MaxSession = 1<<53 - 1

// Frame is one line of a worker that hosts sessions.
type Frame struct {
	Session int64           // 0: the worker's own channel; 1 and up: a hosted session
	Message json.RawMessage // one JSON-RPC message (an object); nil for End
	End     bool            // the hosted session is over
	Open    string          // a hosted session begins: its MCP session id
}

// MaxSessionID bounds the MCP session id of an open frame.
const MaxSessionID = 256

// ErrFrame is wrapped by ParseFrame's errors.
var ErrFrame = errors.New("worker: a line is not a session frame")

// framePrefix starts every frame with a message, up to the session number.
const framePrefix = `{"jsonrpc":"2.0","method":"` + SessionMethod + `","params":{"session":`

// AppendFrame appends to dst the frame of message msg (one encoded
// JSON-RPC message, without its newline) in session, without a newline.
// msg is copied as it is: the caller has encoded it.
func AppendFrame(dst []byte, session int64, msg []byte) []byte {
	dst = append(dst, framePrefix...)
	dst = strconv.AppendInt(dst, session, 10)
	dst = append(dst, `,"message":`...)
	dst = append(dst, msg...)
	return append(dst, "}}"...)
}

// OpenLine returns the frame that opens session with MCP session id id,
// without a newline.
func OpenLine(session int64, id string) []byte {
	dst := strconv.AppendInt([]byte(framePrefix), session, 10)
	dst = append(dst, `,"open":`...)
	dst = strconv.AppendQuote(dst, id)
	return append(dst, "}}"...)
}

// sessionNumber reads a session number as AppendFrame writes it: decimal
// digits without a sign, a fraction, an exponent or a leading zero, from
// 0 to MaxSession.
func sessionNumber(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || len(raw) > 16 || (raw[0] == '0' && len(raw) > 1) {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil && n <= MaxSession
}

// EndLine returns the frame that ends session, without a newline.
func EndLine(session int64) []byte {
	dst := strconv.AppendInt([]byte(framePrefix), session, 10)
	return append(dst, `,"end":true}}`...)
}

type frameLine struct {
	JSONRPC string       `json:"jsonrpc"`
	Method  string       `json:"method"`
	Params  *frameParams `json:"params"`
}

type frameParams struct {
	Session json.RawMessage `json:"session"`
	Message json.RawMessage `json:"message"`
	End     *bool           `json:"end"`
	Open    *string         `json:"open"`
}

// ParseFrame reads a frame written by AppendFrame or EndLine. It is
// strict: another method, an unknown member, a session that is not a
// whole number from 0 to MaxSession, a message that is not a JSON object,
// not exactly one of message, open and end (end must be true, open a
// session id of 1 to MaxSessionID bytes), open or end of session 0,
// anything after the object: each is an error.
func ParseFrame(line []byte) (Frame, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var l frameLine
	if err := dec.Decode(&l); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Frame{}, fmt.Errorf("%w: data after the object", ErrFrame)
	}
	if l.JSONRPC != "2.0" || l.Method != SessionMethod || l.Params == nil {
		return Frame{}, fmt.Errorf("%w: want a %q notification with params", ErrFrame, SessionMethod)
	}
	p := l.Params
	if p.Session == nil {
		return Frame{}, fmt.Errorf("%w: params.session is missing", ErrFrame)
	}
	n, ok := sessionNumber(p.Session)
	if !ok {
		return Frame{}, fmt.Errorf("%w: params.session must be a whole number from 0 to %d", ErrFrame, int64(MaxSession))
	}
	f := Frame{Session: n}
	msg := bytes.TrimSpace(p.Message)
	members := 0
	for _, set := range []bool{p.Message != nil, p.End != nil, p.Open != nil} {
		if set {
			members++
		}
	}
	if members != 1 {
		return Frame{}, fmt.Errorf("%w: want exactly one of params.message, params.open and params.end", ErrFrame)
	}
	switch {
	case p.Open != nil:
		if n == 0 {
			return Frame{}, fmt.Errorf("%w: session 0 (the worker's own channel) is always open", ErrFrame)
		}
		if *p.Open == "" || len(*p.Open) > MaxSessionID {
			return Frame{}, fmt.Errorf("%w: params.open must be a session id of 1 to %d bytes", ErrFrame, MaxSessionID)
		}
		f.Open = *p.Open
	case p.End != nil:
		if !*p.End {
			return Frame{}, fmt.Errorf("%w: params.end must be true", ErrFrame)
		}
		if n == 0 {
			return Frame{}, fmt.Errorf("%w: session 0 (the worker's own channel) cannot end", ErrFrame)
		}
		f.End = true
	case len(msg) == 0 || msg[0] != '{':
		return Frame{}, fmt.Errorf("%w: params.message must be one JSON-RPC message (an object)", ErrFrame)
	default:
		f.Message = msg
	}
	return f, nil
}
