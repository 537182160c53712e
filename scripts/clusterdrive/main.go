// Command clusterdrive drives mcpgate replicas through a load balancer for
// scripts/test-cluster.sh: go-sdk clients of both protocol generations,
// several users, a replica stopped mid-run, and the writes checked in
// PostgreSQL. It prints one PASS or FAIL line per check and exits non-zero
// on any failure. It asserts outcomes only, never timings: every wait is a
// poll with a generous deadline, for a loaded CI machine.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpgate/mcpgate/worker"
)

type driver struct {
	url, issuer, dsn string
	replicas         []string
	stop             string
	stopPID          int
	stats            string
	metrics          map[string]string // replica -> host:port of its /metrics
	rejoined         bool              // only check that every replica serves again
	tlsConfig        *tls.Config
	ctx              context.Context

	mu     sync.Mutex
	acked  map[string]bool // client/seq of every insert the gateway acknowledged
	failed int
}

func main() {
	d := &driver{acked: map[string]bool{}, metrics: map[string]string{}}
	var ca, replicas, metrics string
	flag.StringVar(&d.url, "url", "", "the load balancer's /mcp URL")
	flag.StringVar(&ca, "ca", "", "CA file for the load balancer and the issuer")
	flag.StringVar(&d.issuer, "issuer", "", "the test issuer's URL")
	flag.StringVar(&d.dsn, "dsn", "", "the PostgreSQL DSN the replicas share")
	flag.StringVar(&replicas, "replicas", "mcpgate-0,mcpgate-1,mcpgate-2", "the replica ids")
	flag.StringVar(&d.stop, "stop", "mcpgate-1", "the replica to stop mid-run")
	flag.IntVar(&d.stopPID, "stop-pid", 0, "its process id (SIGTERM)")
	flag.StringVar(&d.stats, "stats", "", "HAProxy's CSV stats URL, to await every server UP")
	flag.BoolVar(&d.rejoined, "rejoined", false, "after a replica was started again: check only that every replica serves new sessions and calls")
	flag.StringVar(&metrics, "metrics", "", "replica=host:port of each replica's metrics listener, comma-separated (optional)")
	flag.Parse()
	d.replicas = strings.Split(replicas, ",")
	for _, kv := range strings.Split(metrics, ",") {
		if r, a, ok := strings.Cut(kv, "="); ok {
			d.metrics[r] = a
		}
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		fatal("reading --ca: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	d.tlsConfig = &tls.Config{RootCAs: pool}
	var cancel context.CancelFunc
	d.ctx, cancel = context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	d.ctx = context.WithValue(d.ctx, oauth2.HTTPClient, &http.Client{Transport: &http.Transport{TLSClientConfig: d.tlsConfig}})

	d.run()
	if d.failed > 0 {
		fmt.Printf("clusterdrive: %d check(s) failed\n", d.failed)
		os.Exit(1)
	}
}

func fatal(format string, args ...any) {
	fmt.Printf("FAIL  "+format+"\n", args...)
	os.Exit(1)
}

func (d *driver) check(name string, ok bool, detail string) {
	if ok {
		fmt.Printf("PASS  %s\n", name)
		return
	}
	d.failed++
	fmt.Printf("FAIL  %s\n      %s\n", name, detail)
}

// client is one go-sdk client and what it has seen.
type client struct {
	name, user, version string
	cs                  *mcp.ClientSession
	replica             string // a legacy session's replica
	seq                 int
}

// tokens mints user's tokens at the test issuer, refreshed as they expire.
func (d *driver) tokens(user string) oauth2.TokenSource {
	return (&clientcredentials.Config{
		ClientID:       "clusterdrive",
		TokenURL:       d.issuer + "/token",
		Scopes:         []string{"mcp:use", "mcp:write"},
		EndpointParams: url.Values{"resource": {d.url}, "username": {user}},
	}).TokenSource(d.ctx)
}

func (d *driver) connect(name, user, version string) (*client, error) {
	ts := d.tokens(user)
	hc := &http.Client{Transport: &oauth2.Transport{Source: ts, Base: &http.Transport{TLSClientConfig: d.tlsConfig}}}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "clusterdrive-" + name, Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(d.ctx, 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url, HTTPClient: hc, DisableStandaloneSSE: true}, opts)
	if err != nil {
		return nil, err
	}
	// The go-sdk client mirrors x-mcp-header arguments (the transaction
	// handle) only for tools it has listed.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		cs.Close()
		return nil, err
	}
	if d.rejoined {
		name = "rejoined-" + name // its rows apart from the first run's
	}
	cl := &client{name: name, user: user, version: version, cs: cs}
	if version != "" {
		cl.replica = worker.ReplicaOf(cs.ID())
	}
	return cl, nil
}

// call runs a tool; a tool error is an error.
func (c *client) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		return sc, fmt.Errorf("%s: tool error %v", tool, sc["error"])
	}
	return sc, nil
}

// status returns the replica whose worker answered (the replica id starts
// the worker's session or instance id).
func (c *client) status(ctx context.Context) (string, error) {
	sc, err := c.call(ctx, "status", map[string]any{})
	if err != nil {
		return "", err
	}
	id, _ := sc["sessionId"].(string)
	if c.version != "" && id != c.cs.ID() {
		return "", fmt.Errorf("status: session %q answered for session %q", id, c.cs.ID())
	}
	return worker.ReplicaOf(id), nil
}

// insert writes one row, recording it as acknowledged when the gateway
// says it committed.
func (d *driver) insert(ctx context.Context, c *client, via, handle string) error {
	c.seq++
	args := map[string]any{"sql": fmt.Sprintf("INSERT INTO cluster_writes (client, seq, via) VALUES ('%s', %d, '%s')", c.name, c.seq, via)}
	if handle != "" {
		args["transaction"] = handle
	}
	if _, err := c.call(ctx, "execute_sql", args); err != nil {
		return err
	}
	if handle != "" {
		return nil // acknowledged by the handle's commit
	}
	if c.version != "" {
		// A 2025-11-25 session holds one transaction until commit.
		if _, err := c.call(ctx, "commit", map[string]any{}); err != nil {
			return err
		}
	}
	d.ack(c.name, c.seq)
	return nil
}

func (d *driver) ack(name string, seq int) {
	d.mu.Lock()
	d.acked[name+"/"+strconv.Itoa(seq)] = true
	d.mu.Unlock()
}

func (d *driver) run() {
	d.awaitServers()
	if err := d.sql("CREATE TABLE IF NOT EXISTS cluster_writes (client text, seq int, via text, PRIMARY KEY (client, seq))"); err != nil {
		fatal("creating the table: %v", err)
	}
	legacy := d.legacySessions()
	if d.rejoined {
		modern := d.modernClients()
		for _, c := range append(legacy, modern...) {
			c.cs.Close()
		}
		return
	}
	d.unknownSessions()
	modern := d.modernClients()
	d.handles(modern)
	d.stopMidRun(legacy, modern)
	d.checkWrites()
	d.reportMetrics()
	for _, c := range append(legacy, modern...) {
		c.cs.Close()
	}
}

// awaitServers polls HAProxy's stats until every replica is UP.
func (d *driver) awaitServers() {
	if d.stats == "" {
		return
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		up := d.serverStates()
		all := true
		for _, r := range d.replicas {
			all = all && up[r] == "UP"
		}
		if all {
			d.check("every replica UP behind the load balancer (/readyz)", true, "")
			return
		}
		if time.Now().After(deadline) {
			fatal("replicas not UP behind the load balancer after 3 minutes: %v", up)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (d *driver) serverStates() map[string]string {
	out := map[string]string{}
	resp, err := http.Get(d.stats)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) > 17 && f[0] == "mcpgate" {
			out[f[1]] = f[17]
		}
	}
	return out
}

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
			r := worker.ReplicaOf(strings.TrimPrefix(h, "txn."))
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

// stopMidRun keeps every client calling while replica d.stop is stopped
// with SIGTERM: its sessions' clients get 404 (ErrSessionMissing) and
// open a new session on another replica; every other client sees no
// error.
func (d *driver) stopMidRun(legacy, modern []*client) {
	if d.stopPID == 0 {
		return
	}
	type result struct {
		c         *client
		orig      string // the replica of its first session ("" for 2026-07-28)
		errs      []string
		missing   int    // 404s: the session was on the stopped replica
		stopping  int    // calls the stopping replica refused as it shut down
		recovered string // the new session's replica
	}
	var (
		wg      sync.WaitGroup
		started sync.WaitGroup
		stopped = make(chan struct{})
		results []*result
	)
	clients := append(append([]*client{}, legacy...), modern...)
	for _, c := range clients {
		res := &result{c: c, orig: c.replica}
		results = append(results, res)
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			after, n := 0, 0
			for after < 4 {
				select {
				case <-stopped:
					after++
				default:
				}
				n++
				if n == 2 {
					started.Done()
				}
				_, err := res.c.status(d.ctx)
				if err == nil {
					err = d.insert(d.ctx, res.c, res.c.replica, "")
				}
				if err == nil {
					continue
				}
				if strings.Contains(err.Error(), shuttingDown) {
					// In flight on the stopping replica: after its drain
					// it stops its workers while the load balancer may
					// still send it requests. Try again.
					res.stopping++
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if !sessionMissing(err) {
					// A failure, unless the call was in flight on the
					// stopping replica: then the session is tried again
					// until the replica is gone and another answers 404.
					res.errs = append(res.errs, err.Error())
					time.Sleep(100 * time.Millisecond)
					continue
				}
				res.missing++
				if res.c.version == "" || res.orig != d.stop {
					continue // a 404 for a session of a live replica: a failure
				}
				// The session is gone with its replica: a new one.
				nc, cerr := d.connect(res.c.name+"-again", res.c.user, res.c.version)
				if cerr != nil {
					res.errs = append(res.errs, "reconnecting: "+cerr.Error())
					continue
				}
				res.c.cs.Close()
				nc.name, nc.seq = res.c.name, res.c.seq
				res.c, res.recovered = nc, nc.replica
			}
		}()
	}
	started.Wait()
	if err := syscall.Kill(d.stopPID, syscall.SIGTERM); err != nil {
		fatal("stopping %s (pid %d): %v", d.stop, d.stopPID, err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for alive(d.stopPID) {
		if time.Now().After(deadline) {
			fatal("%s (pid %d) did not exit within 3 minutes of SIGTERM", d.stop, d.stopPID)
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stopped)
	wg.Wait()

	var others, theirs []string
	missing, moved, stopping := 0, 0, 0
	for _, r := range results {
		if r.orig != d.stop {
			stopping += r.stopping
		}
		switch {
		case r.orig == d.stop:
			missing += r.missing
			if r.missing > 0 && r.recovered != "" && r.recovered != d.stop {
				moved++
				fmt.Printf("      %s: %d 404s, then a new session on %s; errors of calls in flight: %v\n", r.c.name, r.missing, r.recovered, r.errs)
			} else {
				theirs = append(theirs, fmt.Sprintf("%s: %d 404s, new session on %q (errors %v)", r.c.name, r.missing, r.recovered, r.errs))
			}
		case len(r.errs) > 0 || r.missing > 0:
			others = append(others, fmt.Sprintf("%s on %q: %d 404s, errors %v", r.c.name, r.orig, r.missing, r.errs))
		}
	}
	d.check(fmt.Sprintf("%s stopped mid-run: its sessions' clients got 404 (%d) and moved to new sessions (%d)", d.stop, missing, moved),
		len(theirs) == 0 && missing > 0 && moved > 0, strings.Join(theirs, "; "))
	d.check(fmt.Sprintf("the other replicas' clients and every 2026-07-28 client saw no error but %d call(s) in flight on %s as it shut down", stopping, d.stop),
		len(others) == 0, strings.Join(others, "; "))
}

// shuttingDown is what a stopping gateway answers a call it cannot run.
const shuttingDown = "the gateway is shutting down"

// sessionMissing reports a 404 for the session. The go-sdk v1.8.0 client
// wraps ErrSessionMissing only when the 404 has no JSON-RPC error body;
// the gateway's has one, which the client reports with the status text.
func sessionMissing(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || strings.HasSuffix(err.Error(), ": "+http.StatusText(http.StatusNotFound))
}

// alive reports whether pid runs (a zombie has exited).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func (d *driver) sql(q string) error {
	if d.dsn == "" {
		return errors.New("no --dsn")
	}
	conn, err := pgx.Connect(d.ctx, d.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(d.ctx)
	_, err = conn.Exec(d.ctx, q)
	return err
}

// checkWrites reads PostgreSQL directly: every acknowledged write is
// there, written through every replica.
func (d *driver) checkWrites() {
	conn, err := pgx.Connect(d.ctx, d.dsn)
	if err != nil {
		fatal("connecting to PostgreSQL: %v", err)
	}
	defer conn.Close(d.ctx)
	rows, err := conn.Query(d.ctx, "SELECT client, seq, via FROM cluster_writes")
	if err != nil {
		fatal("reading cluster_writes: %v", err)
	}
	have, via := map[string]bool{}, map[string]int{}
	for rows.Next() {
		var c, v string
		var s int
		if err := rows.Scan(&c, &s, &v); err != nil {
			fatal("reading cluster_writes: %v", err)
		}
		have[c+"/"+strconv.Itoa(s)] = true
		via[v]++
	}
	if rows.Err() != nil {
		fatal("reading cluster_writes: %v", rows.Err())
	}
	var lost []string
	for k := range d.acked {
		if !have[k] {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	d.check(fmt.Sprintf("all %d acknowledged writes are in PostgreSQL (%d rows; by replica %v)", len(d.acked), len(have), via), len(lost) == 0,
		fmt.Sprintf("missing: %v", lost))
	every := true
	for _, r := range d.replicas {
		every = every && via[r] > 0
	}
	d.check("writes went through every replica", every, fmt.Sprintf("by replica %v", via))
}

// reportMetrics prints each replica's settled tool calls from /metrics.
func (d *driver) reportMetrics() {
	for _, r := range d.replicas {
		addr, ok := d.metrics[r]
		if !ok || r == d.stop {
			continue
		}
		n, err := toolCalls("http://" + addr + "/metrics")
		d.check(fmt.Sprintf("%s's /metrics counts its tool calls: %d", r, n), err == nil && n > 0, fmt.Sprint(err))
	}
}

func toolCalls(u string) (int, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "mcpgate_tool_calls_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		total += int(v)
	}
	return total, sc.Err()
}
