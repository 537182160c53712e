package bridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// refusal is why a request got no JSON-RPC answer from the server: an
// HTTP status without one (with its challenge and body), an answer over
// the size limit, or an error before any answer.
type refusal struct {
	status     int
	statusText string
	challenge  string // WWW-Authenticate
	body       []byte // a JSON body that is not JSON-RPC (an OAuth error object)
	tooLarge   bool
	limit      int
	err        error
	url        string
	only       map[string]bool // the ids (by idKey) still to answer; nil: all

	contentType string        // of the answer, as parsed
	junk        bool          // the answer held messages that are not JSON-RPC
	idle        time.Duration // the answer stalled for this long (Options.IdleTimeout)
	location    string        // a redirect's target, scheme://host
	server      string        // Options.Server
}

// refusalData is error.data of the answer the bridge makes up: what the
// server said, and what the user can do about it.
type refusalData struct {
	Status           int    `json:"status,omitempty"`
	Challenge        string `json:"challenge,omitempty"`
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
	Hint             string `json:"hint,omitempty"`
	// Server is the remote server's name (mcpgate upstream).
	Server string `json:"server,omitempty"`
}

// refuse answers the request m (line, for a batch: each request in it)
// with one JSON-RPC error saying what happened; a notification or the
// client's own answer gets none (JSON-RPC 2.0 §4.1), only a log line.
func (b *bridge) refuse(line []byte, m *jsonrpc.Message, r refusal) {
	r.server = b.o.Server
	msg, data := r.describe()
	attrs := []any{"status", data.Status, "challenge", data.Challenge, "description", data.ErrorDescription, "hint", data.Hint}
	if r.err != nil && b.o.Server != "" {
		attrs = append(attrs, "err", transportError(r.err)) // the client's message has less of it; never the URL
	}
	b.o.Log.Warn(b.prefix+": "+msg, attrs...)
	answer := func(id json.RawMessage) []byte {
		return jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: jsonrpc.CodeInternalError, Message: b.prefix + ": " + msg, Data: data})
	}
	if m.Method == "" && m.ID == nil { // a batch
		msgs, _, err := jsonrpc.DecodeBody(line)
		if err != nil {
			return
		}
		var out [][]byte
		for _, q := range msgs {
			if q.IsRequest() && (r.only == nil || r.only[idKey(q.ID)]) {
				out = append(out, answer(q.ID))
			}
		}
		if len(out) > 0 {
			b.write(append(append([]byte("["), joinComma(out)...), ']'))
		}
		return
	}
	if m.IsRequest() {
		b.write(answer(m.ID))
	}
}

func joinComma(parts [][]byte) []byte {
	var out []byte
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	return out
}

// describe is the answer's message and data. Nothing in it is secret: the
// status, the challenge and the OAuth error the server sent, never a token.
func (r refusal) describe() (string, refusalData) {
	if r.server != "" {
		return r.describeUpstream()
	}
	d := refusalData{Status: r.status, Challenge: truncate(r.challenge, 1024)}
	var oauth struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal(r.body, &oauth) == nil {
		d.Error, d.ErrorDescription = truncate(oauth.Error, 256), truncate(oauth.ErrorDescription, 1024)
	}
	if d.Error == "" {
		d.Error = oauthclient.ChallengeParam(r.challenge, "error")
	}
	login := "mcpgate login --url " + r.url
	switch {
	case r.err != nil:
		d.Hint = "check that the gateway is reachable; if the login expired, run " + login
		return fmt.Sprintf("no answer from %s: %v", r.url, r.err), d
	case r.tooLarge:
		d.Hint = fmt.Sprintf("the answer is over the bridge's limit of %d bytes; ask for less (a smaller page, fewer rows)", r.limit)
		return "the server's answer is too large", d
	case r.status == http.StatusOK || r.status == http.StatusAccepted:
		d.Hint = "send the request again"
		return fmt.Sprintf("the server answered %d without an answer to this request", r.status), d
	case r.status == http.StatusUnauthorized:
		d.Hint = "the gateway refused the token even after a refresh; run " + login + " again"
	case r.status == http.StatusForbidden && d.Error == "insufficient_scope":
		scope := oauthclient.ChallengeParam(r.challenge, "scope")
		d.Hint = "the token lacks a scope the gateway requires; run " + login
		for _, s := range strings.Fields(scope) {
			d.Hint += " --scope " + s
		}
	case r.status == http.StatusForbidden:
		d.Hint = "the gateway refused the request (its Origin or access policy); ask its operator"
	case r.status == http.StatusNotFound:
		d.Hint = "the gateway does not know the session or the URL; check --url, then restart the client"
	case r.status == http.StatusRequestEntityTooLarge:
		d.Hint = "the request is over the gateway's size limit; send less"
	case r.status == http.StatusTooManyRequests:
		d.Hint = "the gateway's limit of sessions or requests for you is reached; end other sessions or wait"
	case r.status >= 500:
		d.Hint = "the gateway or a proxy in front of it is unavailable; try again later"
	}
	text := r.statusText
	if text == "" {
		text = fmt.Sprintf("%d %s", r.status, http.StatusText(r.status))
	}
	msg := "the server answered " + text
	if d.Error != "" {
		msg += " (" + d.Error + ")"
	}
	return msg, d
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
