package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadOnlyTokenCannotAnswerForAWrite: a worker's
// request to the client (sampling, elicitation) may be part of a write
// request's work, and its ids are small numbers anyone can guess. A
// read-only token's answer on a read-write session is dropped, as its
// notifications/cancelled is, so it cannot steer or approve the write; the
// write token's answer still goes through.
func TestReadOnlyTokenCannotAnswerForAWrite(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}})
	wtok := a.token(t, "alice", writeScopes, nil)
	rtok := a.token(t, "alice", readScopes, nil)
	sid := a.open(t, wtok)

	req, err := http.NewRequest(http.MethodPost, a.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"sample","arguments":{"text":"delete everything?"}}}`))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		sidHdr: sid, protoHdr: "2025-11-25", "Authorization": "Bearer " + wtok} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	st := &sseStream{resp, bufio.NewReader(resp.Body)}
	ask := st.next(t)
	require.Equal(t, "sampling/createMessage", ask["method"])
	id, _ := json.Marshal(ask["id"])
	answer := func(text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","model":"m","content":{"type":"text","text":%q}}}`, id, text)
	}

	r, _ := a.do(t, http.MethodPost, sid, rtok, answer("hijacked"))
	assert.Equal(t, http.StatusAccepted, r.StatusCode)
	r, _ = a.do(t, http.MethodPost, sid, wtok, answer("pong"))
	assert.Equal(t, http.StatusAccepted, r.StatusCode)
	assert.Equal(t, "sampled: pong", resultText(st.next(t)), "the write request got the write token's answer")
}
