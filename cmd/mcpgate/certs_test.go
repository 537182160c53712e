package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runMain(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	err = m.Run(context.Background(), args)
	require.NoError(t, m.Close())
	return out.String(), errb.String(), err
}

func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	out, _, err := runMain(t, "certs", "--dir", dir)
	require.NoError(t, err)
	assert.Contains(t, out, filepath.Join(dir, "cert.pem"))
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	require.NoError(t, err)
	assert.Equal(t, []string{"localhost"}, pair.Leaf.DNSNames)

	_, _, err = runMain(t, "certs", "--dir", dir)
	require.Error(t, err, "an existing certificate is kept without --force")
	assert.Contains(t, err.Error(), "--force")

	_, _, err = runMain(t, "certs", "--dir", dir, "--force", "--host", "mcp.internal", "--host", "10.1.2.3")
	require.NoError(t, err)
	pair, err = tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp.internal"}, pair.Leaf.DNSNames)
	assert.Equal(t, "10.1.2.3", pair.Leaf.IPAddresses[0].String())

	_, errOut, err := runMain(t, "certs", "--bogus")
	require.ErrorIs(t, err, errUsage)
	assert.True(t, strings.Contains(errOut, "unknown flag"), "got %q", errOut)
}
