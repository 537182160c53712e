package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/workerproto"
)

// TestBindKeySlots: the one table keeps a session by its id alone (a
// request finds it by MCP-Session-Id, then its owner is checked) and a
// per-user worker by its whole key, so that no per-user key can name a
// session's slot, and per-user quotas count both by the principal.
func TestBindKeySlots(t *testing.T) {
	alice := auth.Owner{Issuer: "https://i", Subject: "s1", UserID: "alice"}
	session := bindKey{owner: alice, user: "alice", tools: workerproto.AllTools, session: "abc"}
	user := bindKey{owner: alice, user: "alice", tools: workerproto.AllTools}
	assert.Equal(t, bindKey{session: "abc"}, session.slot(), "a session is kept by its id")
	assert.Equal(t, user, user.slot(), "a per-user worker is kept by its whole key")
	assert.NotEqual(t, session.slot(), user.slot())
	assert.Equal(t, session.principal(), user.principal(), "one principal's quota")

	// Another user id under the same issuer and subject is the same
	// principal (quota), never the same worker.
	mallory := user
	mallory.owner.UserID, mallory.user = "mallory", "mallory"
	assert.Equal(t, user.principal(), mallory.principal())
	assert.NotEqual(t, user.slot(), mallory.slot())

	// Rights are part of a per-user worker's key.
	ro := user
	ro.readOnly = true
	assert.NotEqual(t, user.slot(), ro.slot())
	granted := user
	granted.tools = toolsKey(toolSet{"status": true})
	assert.NotEqual(t, user.slot(), granted.slot())
	assert.Equal(t, toolSet{"status": true}, granted.grant())
	assert.Nil(t, user.grant(), "no policy: every tool")
}
