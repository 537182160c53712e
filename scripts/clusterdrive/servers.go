package main

import (
	"strings"
)

// secondServer drives a second server of the replicas' servers list at
// its own path, and both servers through the combined /mcp, through the
// load balancer as the first: legacy sessions (a combined session too)
// carry their replica and reach it, 2026-07-28 calls spread over every
// replica, and (first run) transaction handles minted through the
// combined endpoint reach their replica. The rows they write are checked
// with the first server's (checkWrites). Nothing when --second-url is
// unset.
func (d *driver) secondServer() {
	if d.second == "" {
		return
	}
	second := d.servers[len(d.servers)-1]
	for _, at := range []struct{ url, rows, prefix string }{
		{d.second, second + "-", ""},
		{d.combined, "combined-", second + "__"},
	} {
		if at.url == "" {
			continue
		}
		sd := &driver{url: at.url, issuer: d.issuer, replicas: d.replicas, rejoined: d.rejoined, tlsConfig: d.tlsConfig, ctx: d.ctx,
			acked: map[string]bool{}, rows: at.rows, toolPrefix: at.prefix, label: at.url[strings.LastIndex(at.url, "/mcp"):]}
		legacy := sd.legacySessions()
		modern := sd.modernClients()
		if !d.rejoined && at.prefix != "" {
			sd.handles(modern)
		}
		for _, c := range append(legacy, modern...) {
			c.cs.Close()
		}
		d.mu.Lock()
		for k := range sd.acked {
			d.acked[k] = true
		}
		d.failed += sd.failed
		d.mu.Unlock()
	}
}
