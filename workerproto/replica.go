package workerproto

import "strings"

// ReplicaSeparator ends the gateway replica id at the start of the ids a
// gateway replica mints (gateway.Options.ReplicaID): replica r1's session
// ids read "r1_<hex>" and its per-user workers' instance ids (the
// EnvSessionID of a ScopeUser worker) "r1_u-<hex>", so the built-in
// worker's transaction handles read "txn.r1_u-<hex>.<secret>". A load
// balancer routes on that prefix of the Mcp-Session-Id or
// Mcp-Param-Transaction header (deploy/haproxy/haproxy.cfg). A replica id
// is a DNS label, which never holds the separator.
const ReplicaSeparator = "_"

// ReplicaOf returns the gateway replica id that starts id, or "" when id
// carries none (a single gateway).
func ReplicaOf(id string) string {
	r, _, ok := strings.Cut(id, ReplicaSeparator)
	if !ok {
		return ""
	}
	return r
}
