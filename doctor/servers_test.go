package doctor

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
)

// TestDoctorServers: with a servers list, each server is checked under
// its own name: its audience, its worker, a remote one's URL, over its
// ca_file.
func TestDoctorServers(t *testing.T) {
	f := newServerFixture(t)
	remote := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer remote.Close()
	ca := filepath.Join(f.dir, "remote-ca.pem")
	require.NoError(t, os.WriteFile(ca, pemOf(remote.Certificate()), 0o644))
	f.cfg.Servers = []config.ServerEntry{
		{Name: "db"},
		{Name: "ev", Command: []string{"/bin/sh"}},
		{Name: "saas", URL: remote.URL + "/mcp", CAFile: ca},
		{Name: "gone", URL: "https://127.0.0.1:1/mcp"},
		{Name: "untrusted", URL: remote.URL + "/mcp"},
	}
	r := f.check(t)
	got, ok := r.Find("config")
	require.True(t, ok)
	require.Equal(t, OK, got.Status, got.Detail)
	var started []string
	CheckServers(context.Background(), r, f.cfg, func(_ context.Context, sc *config.Config, ro bool) (string, error) {
		started = append(started, sc.ServerName())
		if sc.ServerName() == "ev" {
			return "", errors.New("exit status 1")
		}
		return "mcpgate", nil
	})
	assert.Equal(t, []string{"db", "db", "ev", "ev"}, started, "remote servers start no worker here")

	got, ok = r.Find("server db")
	require.True(t, ok)
	assert.Contains(t, got.Detail, f.cfg.Server.PublicURL+"/mcp/db")
	for check, want := range map[string]Status{
		"server db worker": OK, "server db worker (read-only)": OK,
		"server ev worker": Fail, "server saas": OK,
	} {
		got, ok := r.Find(check)
		require.True(t, ok, check)
		assert.Equal(t, want, got.Status, "%s: %s", check, got.Detail)
	}
	for _, name := range []string{"gone", "untrusted"} {
		var fails int
		for _, fd := range r.Findings {
			if fd.Check == "server "+name && fd.Status == Fail {
				fails++
				assert.Contains(t, fd.Fix, "ca_file")
			}
		}
		assert.Equal(t, 1, fails, name)
	}
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
