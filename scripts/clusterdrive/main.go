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
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

type driver struct {
	url, issuer, dsn string
	replicas         []string
	stop             string
	stopPID          int
	stats            string
	metrics          map[string]string // replica -> host:port of its /metrics
	rejoined         bool              // only check that every replica serves again
	// second and combined are a second server's /mcp/<name> URL and the
	// combined /mcp URL over both, with the names of both servers (servers):
	// their phase runs when set.
	second, combined string
	servers          []string
	rows             string // a prefix for the client names (the rows' client column)
	toolPrefix       string // before every tool name (the combined /mcp)
	label            string // names the path in each check's line
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
	flag.StringVar(&d.second, "second-url", "", "a second server's /mcp/<name> URL through the load balancer (optional)")
	flag.StringVar(&d.combined, "combined-url", "", "the combined /mcp URL through the load balancer (with --second-url)")
	var servers string
	flag.StringVar(&servers, "servers", "", "the names of the --url and --second-url servers, comma-separated (with --combined-url)")
	flag.Parse()
	d.replicas = strings.Split(replicas, ",")
	if servers != "" {
		d.servers = strings.Split(servers, ",")
	}
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
	if d.label != "" {
		name = "[" + d.label + "] " + name
	}
	if ok {
		fmt.Printf("PASS  %s\n", name)
		return
	}
	d.failed++
	fmt.Printf("FAIL  %s\n      %s\n", name, detail)
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
		d.secondServer()
		return
	}
	d.unknownSessions()
	modern := d.modernClients()
	d.handles(modern)
	d.secondServer()
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
