package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/mcpgate/mcpgate/oauthclient"
)

// describeUpstream is describe for the gateway's worker of a remote
// server: the message names the server (never its URL, whose path may be
// a secret of the operator's), and the hint says what a user of the
// gateway can do, or that its operator must act.
func (r refusal) describeUpstream() (string, refusalData) {
	who := fmt.Sprintf("the remote server %q", r.server)
	d := refusalData{Status: r.status, Challenge: truncate(r.challenge, 1024), Server: r.server}
	var oauth struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(r.body, &oauth) == nil {
		d.Error = truncate(oauth.Error, 256)
	}
	if d.Error == "" {
		d.Error = oauthclient.ChallengeParam(r.challenge, "error")
	}
	const operator = "tell the gateway's operator"
	switch {
	case errors.Is(r.err, ErrHeadersFile):
		d.Hint = "the gateway cannot read its credentials for the remote server; " + operator
		return who + " was not asked: the gateway's headers file for it is not usable (the gateway's log says why)", d
	case isTimeout(r.err):
		d.Hint = "the remote server is slow or hangs; try again later, or " + operator
		return fmt.Sprintf("%s did not answer in time: %v", who, transportError(r.err)), d
	case r.err != nil:
		d.Hint = "the remote server is down, slow or unreachable from the gateway; try again later, or " + operator
		return fmt.Sprintf("%s could not be reached: %v", who, transportError(r.err)), d
	case r.tooLarge:
		d.Hint = fmt.Sprintf("the answer is over the limit of %d bytes; ask for less (a smaller page, fewer items)", r.limit)
		return who + " sent an answer over the size limit", d
	case r.idle > 0:
		d.Hint = "the remote server stopped sending in the middle of its answer; try again later"
		return fmt.Sprintf("%s sent nothing for %v in the middle of its answer", who, r.idle), d
	case r.junk:
		d.Hint = "the remote server answered something that is not MCP; " + operator
		return who + " answered with data that is not JSON-RPC", d
	case r.status >= 300 && r.status < 400:
		d.Hint = "the gateway does not follow redirects; its operator should set the server's url to where it redirects"
		to := ""
		if r.location != "" {
			to = " to " + r.location
		}
		return fmt.Sprintf("%s redirects (%d)%s", who, r.status, to), d
	case r.status >= 200 && r.status < 300 && r.contentType != "application/json" && r.contentType != "text/event-stream":
		d.Hint = "the remote server answered something that is not MCP; " + operator
		ct := r.contentType
		if ct == "" {
			ct = "none"
		}
		return fmt.Sprintf("%s answered %d with Content-Type %s, not JSON or an event stream", who, r.status, truncate(ct, 128)), d
	case r.status >= 200 && r.status < 300:
		d.Hint = "the remote server ended its answer early (it failed, or the connection broke); try again"
		return fmt.Sprintf("%s ended its answer (%d) without answering this request", who, r.status), d
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		d.Hint = "the remote server refused the gateway's credentials for it; " + operator
	case r.status == http.StatusNotFound:
		d.Hint = "the remote server does not know the URL or the session; " + operator
	case r.status == http.StatusRequestEntityTooLarge:
		d.Hint = "the request is over the remote server's size limit; send less"
	case r.status == http.StatusTooManyRequests:
		d.Hint = "the remote server is limiting requests; wait and try again"
	case r.status >= 500:
		d.Hint = "the remote server failed or is unavailable; try again later"
	}
	msg := fmt.Sprintf("%s answered %d %s", who, r.status, http.StatusText(r.status))
	if d.Error != "" {
		msg += " (" + d.Error + ")"
	}
	return msg, d
}

// transportError is err without the URL net/http puts in front of it.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// isTimeout says whether err is a timeout of the HTTP client's: a
// connection, a TLS handshake or an answer's head that took too long.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
