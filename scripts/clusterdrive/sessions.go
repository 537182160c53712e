package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/workerproto"
)

// legacySessions opens 2025-11-25 sessions for three users until every
// replica holds two, and shows each session's calls answered by its own
// worker on its own replica.
func (d *driver) legacySessions() []*client {
	users := []string{"alice", "bob", "carol"}
	per := map[string]int{}
	var out []*client
	for i := 0; i < 30 && len(out) < 2*len(d.replicas); i++ {
		c, err := d.connect(fmt.Sprintf("legacy-%d", i), users[i%len(users)], "2025-11-25")
		if err != nil {
			fatal("opening a 2025-11-25 session through the load balancer: %v", err)
		}
		if per[c.replica] >= 2 {
			c.cs.Close()
			continue
		}
		per[c.replica]++
		out = append(out, c)
	}
	d.check(fmt.Sprintf("2025-11-25 sessions carry their replica in the session id, spread by round robin: %v", per),
		len(per) == len(d.replicas) && per[""] == 0, fmt.Sprintf("sessions per replica: %v", per))
	calls, bad := map[string]int{}, []string{}
	for _, c := range out {
		for range 3 {
			r, err := c.status(d.ctx)
			if err == nil {
				err = d.insert(d.ctx, c, c.replica, "")
			}
			if err != nil || r != c.replica {
				bad = append(bad, fmt.Sprintf("%s (%s): answered by %q: %v", c.name, c.replica, r, err))
				continue
			}
			calls[r] += 2
		}
	}
	d.check(fmt.Sprintf("every session's calls reach its own replica: %v", calls), len(bad) == 0, strings.Join(bad, "; "))
	return out
}

// unknownSessions sends session ids the load balancer cannot place or no
// replica holds: each must get a replica's 404, never a 5xx.
func (d *driver) unknownSessions() {
	tok, err := d.tokens("alice").Token()
	if err != nil {
		fatal("getting a token: %v", err)
	}
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: d.tlsConfig}}
	hex := strings.Repeat("0f", 16)
	var bad []string
	for _, sid := range []string{"nosuch_" + hex, d.replicas[0] + "_" + hex, hex, "_" + hex, "%[req.hdr(host)]_" + hex} {
		req, _ := http.NewRequestWithContext(d.ctx, http.MethodPost, d.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid, "Authorization": "Bearer " + tok.AccessToken} {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", sid, err))
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			bad = append(bad, fmt.Sprintf("%s: got %d, want 404", sid, resp.StatusCode))
		}
	}
	d.check("session ids of no replica or no session get a replica's 404", len(bad) == 0, strings.Join(bad, "; "))
}

// modernClients connects 2026-07-28 clients of two users and shows their
// calls spread over every replica.
func (d *driver) modernClients() []*client {
	var out []*client
	seen := map[string]int{}
	var errs []string
	for i, u := range []string{"dave", "erin", "dave"} {
		c, err := d.connect(fmt.Sprintf("modern-%d", i), u, "")
		if err != nil {
			fatal("connecting a 2026-07-28 client through the load balancer: %v", err)
		}
		if v := c.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			fatal("the go-sdk client negotiated %s, not 2026-07-28", v)
		}
		out = append(out, c)
		for range 6 {
			r, err := c.status(d.ctx)
			if err != nil {
				errs = append(errs, err.Error())
			}
			seen[r]++
		}
	}
	d.check(fmt.Sprintf("2026-07-28 calls spread over every replica: %v", seen), len(errs) == 0 && len(seen) == len(d.replicas) && seen[""] == 0,
		fmt.Sprintf("replicas %v, errors %v", seen, errs))
	return out
}

// handles begins transactions (round robin picks a replica for each) and
// runs their calls through the load balancer: each reaches the replica
// that minted the handle via the mirrored Mcp-Param-Transaction header,
// or it would fail with handleForeign.
func (d *driver) handles(modern []*client) {
	minted := map[string]int{}
	var errs []string
	for round := range 3 {
		for _, c := range modern {
			sc, err := c.call(d.ctx, "begin", nil)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			h, _ := sc["transaction"].(string)
			r := workerproto.ReplicaOf(strings.TrimPrefix(h, "txn."))
			minted[r]++
			first := c.seq + 1
			for range 3 {
				if err := d.insert(d.ctx, c, r, h); err != nil {
					errs = append(errs, fmt.Sprintf("round %d, %s on %s: %v", round, c.name, r, err))
				}
			}
			if _, err := c.call(d.ctx, "commit", map[string]any{"transaction": h}); err != nil {
				errs = append(errs, fmt.Sprintf("commit on %s: %v", r, err))
				continue
			}
			for s := first; s <= c.seq; s++ {
				d.ack(c.name, s)
			}
		}
	}
	d.check(fmt.Sprintf("transaction handles' calls reach the replica that minted them (handles per replica %v)", minted),
		len(errs) == 0 && minted[""] == 0, strings.Join(errs, "; "))
}
