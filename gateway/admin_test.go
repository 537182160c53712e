package gateway

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotAndEnd: the operator's read shows a session and a per-user
// worker with their users and processes, and End stops each: the session
// is gone (404), the worker's process reaped, and an id that runs nowhere
// ends nothing.
func TestSnapshotAndEnd(t *testing.T) {
	g, url := principalGateway(t, []string{sdkWorker}, Options{ReplicaID: "r1", SafeTools: []string{"echo"}})
	sid := rawSessionWith(t, url, "X-Test-User", "alice")
	status, m := modernCall(t, url, "bob", true, "2", "echo", map[string]any{"text": "x"})
	require.Equal(t, http.StatusOK, status, "%v", m)

	s := g.Snapshot()
	require.Len(t, s.Sessions, 1)
	require.Len(t, s.Workers, 1)
	sessionPid, workerPid := s.Sessions[0].Pid, s.Workers[0].Pid
	require.NotZero(t, sessionPid)
	require.NotZero(t, workerPid)
	assert.Equal(t, "r1", s.Replica)
	require.Len(t, s.Sessions, 1)
	require.Len(t, s.Workers, 1)
	assert.Equal(t, Live{ID: sid, Kind: WorkerSession, User: "alice", Pid: sessionPid, LastCall: s.Sessions[0].LastCall}, s.Sessions[0])
	assert.False(t, s.Workers[0].LastCall.IsZero())
	assert.Equal(t, "bob", s.Workers[0].User)
	assert.True(t, s.Workers[0].ReadOnly)
	assert.Equal(t, workerPid, s.Workers[0].Pid)
	assert.Equal(t, sid[:8], s.Sessions[0].ShortID())
	assert.Contains(t, s.Limits, Usage{Key: "limits.max_sessions", Used: 2, Max: 1024})

	_, ok := g.End(context.Background(), "no-such-id")
	assert.False(t, ok)
	_, ok = g.End(context.Background(), sid[:8])
	assert.False(t, ok, "a session is ended by its whole id only")

	l, ok := g.End(context.Background(), sid)
	require.True(t, ok)
	assert.Equal(t, "alice", l.User)
	requireReaped(t, sessionPid)
	resp, _ := rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, sidHdr, sid, protoHdr, "2025-11-25", "X-Test-User", "alice")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	l, ok = g.End(context.Background(), s.Workers[0].ID)
	require.True(t, ok)
	assert.Equal(t, WorkerUser, l.Kind)
	requireReaped(t, workerPid)
	after := g.Snapshot()
	assert.Empty(t, after.Sessions)
	assert.Empty(t, after.Workers)
}
