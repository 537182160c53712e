package worker

import (
	"strconv"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// EnvScope tells a worker what it serves: ScopeSession (one MCP session of
// 2025-11-25 or earlier) or ScopeUser (every 2026-07-28 request of one user
// and read-only flag, for as long as it is not idle). State that must span
// calls in a ScopeUser worker travels in handles the worker mints, which
// embed its EnvSessionID (the worker instance id); see docs/gateway.md.
const (
	EnvScope     = "MCPGATE_WORKER_SCOPE"
	ScopeSession = "session"
	ScopeUser    = "user"
)

// CancelStream gives up on every request of s still in flight: each is
// settled without an answer and the worker gets notifications/cancelled
// with its gateway id (MCP 2026-07-28 §Cancellation: a closed response
// stream cancels its request).
func (c *Conn) CancelStream(s *Stream) {
	c.mu.Lock()
	var gids []int64
	for gid, cl := range c.calls {
		if cl.stream == s {
			gids = append(gids, gid)
			c.forgetLocked(gid, cl)
		}
	}
	c.mu.Unlock()
	for _, gid := range gids {
		s.forget()
		params := `{"requestId":` + strconv.FormatInt(gid, 10) + `,"reason":"the client closed its stream"}`
		_ = c.send(&jsonrpc.Message{JSONRPC: "2.0", Method: "notifications/cancelled", Params: []byte(params)})
	}
}
