package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/mcpgate/mcpgate/config"
)

// ServerWorker starts the worker the server sc would start for a session
// (read-only or not) and returns its answer to initialize, as
// ServerOptions.Worker does for the one server at /mcp.
type ServerWorker func(ctx context.Context, sc *config.Config, readOnly bool) (serverName string, err error)

// remoteTimeout bounds the reachability check of a remote server.
const remoteTimeout = 5 * time.Second

// CheckServers adds to r the findings of each server of cfg's servers
// list, checked "server NAME": its path and audience; for a built-in or
// command server its worker started (through worker; nil skips that);
// for a remote server its URL reachable over TLS that verifies with the
// server's ca_file. cfg has been validated (CheckServer), so each command
// is found and each URL well-formed.
func CheckServers(ctx context.Context, r *Report, cfg *config.Config, worker ServerWorker) {
	for _, sc := range cfg.ServerConfigs() {
		if sc.Entry() == nil {
			return // no servers list
		}
		check := "server " + sc.ServerName()
		r.ok(check, fmt.Sprintf("served at %s; tokens must carry aud %s", sc.MountPath(), sc.Resource()))
		if e := sc.Entry(); e.URL != "" {
			checkRemote(ctx, r, check, e)
			continue
		}
		if worker == nil {
			continue
		}
		for _, ro := range []bool{false, true} {
			c := check + " worker"
			if ro {
				c += " (read-only)"
			}
			if name, err := worker(ctx, sc, ro); err != nil {
				r.fail(c, err.Error(), "run the server's command by hand to see its error")
			} else {
				r.ok(c, "started and answered initialize ("+name+")")
			}
		}
	}
}

// checkRemote reports whether a remote server's URL answers at all: any
// HTTP status will do (an MCP endpoint answers a bare GET with 401, 405 or
// a stream); a TLS or connection failure will not.
func checkRemote(ctx context.Context, r *Report, check string, e *config.ServerEntry) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			r.fail(check, err.Error(), "make ca_file readable")
			return
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			r.fail(check, e.CAFile+" holds no PEM certificate", "give a PEM file of the CA that signed the server's certificate")
			return
		}
		tc.RootCAs = pool
	}
	hc := &http.Client{Timeout: remoteTimeout, Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL, nil)
	if err != nil {
		r.fail(check, err.Error(), "fix url")
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		r.fail(check, fmt.Sprintf("%s does not answer: %v", e.URL, err), "check the URL, the network path from this machine, and ca_file for a private CA")
		return
	}
	resp.Body.Close()
	r.ok(check, fmt.Sprintf("%s answers (HTTP %d)", e.URL, resp.StatusCode))
}
