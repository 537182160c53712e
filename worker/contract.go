package worker

import "github.com/mcpgate/mcpgate/workerproto"

// Names of the contract (package workerproto) that the gateway reads beside
// the Launcher's: which tools a worker serves, what it serves, and the
// replica prefix of the ids it mints.
const (
	AllTools         = workerproto.AllTools
	ScopeSession     = workerproto.ScopeSession
	ScopeUser        = workerproto.ScopeUser
	ReplicaSeparator = workerproto.ReplicaSeparator
)

// ReplicaOf is workerproto.ReplicaOf.
func ReplicaOf(id string) string { return workerproto.ReplicaOf(id) }
