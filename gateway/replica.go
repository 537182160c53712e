package gateway

import (
	"fmt"
	"regexp"

	"github.com/mcpgate/mcpgate/workerproto"
)

// replicaPattern is what a replica id may be: a DNS label (RFC 1123), so
// that a Kubernetes pod name (a StatefulSet's mcpgate-0) or a host name
// serves as one, and so that it holds neither workerproto.ReplicaSeparator,
// which ends it in every id below, nor the "." that splits a transaction
// handle.
var replicaPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// CheckReplicaID reports why id cannot name a gateway replica, or nil.
// The empty id is valid: a single gateway, ids without a prefix.
func CheckReplicaID(id string) error {
	if id == "" || replicaPattern.MatchString(id) {
		return nil
	}
	return fmt.Errorf("gateway: replica id %q is not a DNS label (1 to 63 of a-z 0-9 -, starting and ending with a letter or digit)", id)
}

// replicaPrefix returns what starts every id this gateway mints: the
// replica id and the separator, or "" for a single gateway.
func (o Options) replicaPrefix() string {
	if o.ReplicaID == "" {
		return ""
	}
	return o.ReplicaID + workerproto.ReplicaSeparator
}

// newSessionID mints a legacy session id: 128 bits from crypto/rand
// (docs/design.md, Session ownership) after the replica prefix.
func (g *Gateway) newSessionID() string {
	return g.opts.replicaPrefix() + newSessionID()
}

// newInstanceID mints a per-user worker's instance id, which the built-in
// worker puts into every transaction handle it mints.
func (g *Gateway) newInstanceID() string {
	return g.opts.replicaPrefix() + "u-" + newSessionID()
}
