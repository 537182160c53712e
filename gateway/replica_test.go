package gateway

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/workerproto"
)

func TestCheckReplicaID(t *testing.T) {
	for _, id := range []string{"", "r1", "mcpgate-0", strings.Repeat("a", 63)} {
		assert.NoError(t, CheckReplicaID(id), id)
	}
	// Hostile: what would break the prefix a load balancer routes on.
	for _, id := range []string{"r1_x", "a.b", "R1", "-r", "r-", strings.Repeat("a", 64), "r 1", "r\n1", "é"} {
		assert.Error(t, CheckReplicaID(id), id)
	}
	_, err := New(launcher(t, nil, worker.LauncherOptions{}), Options{ReplicaID: "bad_id"})
	require.Error(t, err, "New refuses a replica id that is not a DNS label")
}

// TestReplicaIDs: every session id and per-user worker instance id starts
// with the replica id, and workerproto.ReplicaOf reads it back.
func TestReplicaIDs(t *testing.T) {
	for _, replica := range []string{"", "mcpgate-2"} {
		g := &Gateway{opts: Options{ReplicaID: replica}}
		sid, inst := g.newSessionID(), g.newInstanceID()
		assert.Equal(t, replica, workerproto.ReplicaOf(sid), sid)
		assert.Equal(t, replica, workerproto.ReplicaOf(inst), inst)
		assert.Len(t, strings.TrimPrefix(sid, g.opts.replicaPrefix()), 32, "128 bits after the prefix")
		assert.True(t, strings.HasPrefix(strings.TrimPrefix(inst, g.opts.replicaPrefix()), "u-"), inst)
	}
}
