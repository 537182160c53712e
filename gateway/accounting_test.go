package gateway

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAccountingSharedAcrossGateways (hostile): two gateways of one
// process (two servers) that share an Accounting share its limits: a user
// at their MaxSessionsPerUser on one server gets 429 on the other rather
// than a second share, the process-wide MaxSessions counts both, and a
// session ended on one frees the slot for the other. Another user is not
// affected.
func TestAccountingSharedAcrossGateways(t *testing.T) {
	acct := NewAccounting()
	ga, urlA := ownerGateway(t, Options{Server: "a", MaxSessionsPerUser: 1, MaxSessions: 2, Accounting: acct})
	_, urlB := ownerGateway(t, Options{Server: "b", MaxSessionsPerUser: 1, MaxSessions: 2, Accounting: acct})
	kim := who{iss: "https://a.example", sub: "s-kim", user: "kim"}
	lee := who{iss: "https://a.example", sub: "s-lee", user: "lee"}
	ann := who{iss: "https://a.example", sub: "s-ann", user: "ann"}

	sa := openAs(t, urlA, kim)
	resp, body := rawDo(t, http.MethodPost, urlB, initBody, kim.headers()...)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "kim's second server over one per-user share: %s", body)
	resp, body = rawDo(t, http.MethodPost, urlB, toolCall("pid"), append(kim.headers(), protoHdr, "2026-07-28")...)
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "a per-user worker over the share: %s", body)

	openAs(t, urlB, lee) // the second of MaxSessions, on the other server
	resp, body = rawDo(t, http.MethodPost, urlA, initBody, ann.headers()...)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "MaxSessions counts both servers: %s", body)

	resp, _ = rawDo(t, http.MethodDelete, urlA, "", append(kim.headers(), sidHdr, sa, protoHdr, "2025-11-25")...)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	openAs(t, urlB, kim) // kim's slot, given back on a, taken on b
	assert.Equal(t, 0, ga.Sessions())
}
