package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
		refused   int    // new workers the draining replica refused (503)
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
				if strings.Contains(err.Error(), draining) {
					// The draining replica refused a new worker with 503
					// before HAProxy took it out of the rotation: nothing
					// ran, and HAProxy does not resend a request a replica
					// received. Do as Retry-After says.
					res.refused++
					time.Sleep(time.Second)
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
	missing, moved, stopping, refused := 0, 0, 0, 0
	for _, r := range results {
		if r.orig != d.stop {
			stopping += r.stopping
			refused += r.refused
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
	d.check(fmt.Sprintf("the other replicas' clients and every 2026-07-28 client saw no error but %d call(s) in flight on %s as it shut down and %d new worker(s) its drain refused with 503", stopping, d.stop, refused),
		len(others) == 0, strings.Join(others, "; "))
}

// shuttingDown is what a stopping gateway answers a call it cannot run;
// draining what a draining one answers a request that needs a new session
// or worker (503, Retry-After).
const (
	shuttingDown = "the gateway is shutting down"
	draining     = "draining before a restart"
)

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
