package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoginBrowserFromEnv: without a browser of the caller's, login runs
// the program $BROWSER names with the authorization URL, as xdg-open and
// git do: here a script that follows the redirect back to login's
// listener, as an agent without a display would.
func TestLoginBrowserFromEnv(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is missing")
	}
	g := startTLSGateway(t, nil)
	c := newClientSide(t, g)
	dir := t.TempDir()
	marker := filepath.Join(dir, "visited")
	browser := filepath.Join(dir, "browser")
	require.NoError(t, os.WriteFile(browser, []byte("#!/bin/sh\ntouch '"+marker+"'\nexec curl -sS -L --cacert '"+c.caFile+"' -o /dev/null \"$1\"\n"), 0o755))
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "BROWSER" {
			return browser
		}
		return ""
	}}
	err := m.Run(context.Background(), []string{"login", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache, "--timeout", "60s"})
	require.NoError(t, m.Close())
	require.NoError(t, err, errb.String())
	assert.FileExists(t, marker, "the $BROWSER program ran")
	assert.Contains(t, out.String(), "logged in to "+g.resource)
	assert.Contains(t, errb.String(), "visit:", "the URL is printed too")
}
