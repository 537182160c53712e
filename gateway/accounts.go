package gateway

import (
	"errors"
	"net/http"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// DecisionNoAccount is a CallEvent's Decision for a request refused
// because its user id maps to no OS account (worker.run_as: user): its
// worker was not started, and no other account served it.
const DecisionNoAccount = "noAccount"

// errNoAccount answers a request whose user id maps to no OS account. It
// names no account, uid or path: those are the operator's, in the log.
var errNoAccount = failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest,
	"gateway: this user id has no OS account to run a worker under (worker.run_as: user); ask the operator to create one or widen worker.uid_range",
	map[string]any{"kind": "noAccount"}}

// startFailure is the answer to a worker that could not be started: a
// user id without an account is the caller's to hear about, anything
// else is the gateway's (f).
func startFailure(err error, f failure) failure {
	if errors.Is(err, worker.ErrNoAccount) {
		return errNoAccount
	}
	var fe failureError
	if errors.As(err, &fe) {
		return fe.f
	}
	return f
}

// refusedNoAccount audits a request refused with errNoAccount.
func (g *Gateway) refusedNoAccount(c *call, m *jsonrpc.Message, to callee, readOnly bool, f failure) {
	if f.msg == errNoAccount.msg {
		g.refusedWith(c, m, to, readOnly, DecisionNoAccount, f.status)
	}
}
