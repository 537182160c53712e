package main

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readyz returns the status of g's /readyz, or 0 when nothing answers.
func (g *tlsGateway) readyz(t *testing.T) int {
	t.Helper()
	resp, err := g.client.Get("https://" + g.addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// awaitLog waits for s in the log l, or fails after a generous deadline.
func awaitLog(t *testing.T, l *logWatch, s string) {
	t.Helper()
	select {
	case <-l.seen(s):
	case <-time.After(60 * time.Second):
		t.Fatalf("no %q in the log within 60s:\n%s", s, l.String())
	}
}

// TestListensOnceKeysAreLoaded: a replica started while its issuer is
// unreachable refuses connections (which a load balancer retries on
// another replica: nothing reached this one) rather than answering every
// token 503 while the balancer may still count it up; once the keys are
// in it listens, and /readyz says ready.
func TestListensOnceKeysAreLoaded(t *testing.T) {
	watch := &logWatch{}
	g := launchTLSGateway(t, nil, tlsLaunch{issuerDown: true, watch: watch})
	awaitLog(t, watch, "cannot load the issuer's signing keys yet")
	c, err := net.Dial("tcp", g.addr)
	if err == nil {
		c.Close()
		t.Fatal("the gateway accepts connections before the issuer's keys are loaded")
	}

	require.NoError(t, g.issuer.Start())
	g.awaitServing(t)
	assert.Equal(t, http.StatusOK, g.readyz(t))
}

// TestReadyzWaitsForKeys: when the issuer stays down past the wait, the
// gateway listens (so /healthz answers and probes do not restart it) and
// /readyz is 503 until the keys are loaded.
func TestReadyzWaitsForKeys(t *testing.T) {
	defer func(w time.Duration) { keysWait = w }(keysWait)
	keysWait = time.Millisecond
	watch := &logWatch{}
	g := launchTLSGateway(t, nil, tlsLaunch{issuerDown: true, watch: watch})
	awaitLog(t, watch, `msg="mcpgate: serving" `)
	resp, err := g.client.Get("https://" + g.addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "alive")
	assert.Equal(t, http.StatusServiceUnavailable, g.readyz(t), "not ready without the keys")

	require.NoError(t, g.issuer.Start())
	g.awaitServing(t) // the keys are in: a token is checked
	// /readyz caches its checks for 2s: wait for the next one to pass.
	deadline := time.Now().Add(60 * time.Second)
	for g.readyz(t) != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "/readyz not 200 within 60s of the keys loading")
		time.Sleep(100 * time.Millisecond)
	}
}
