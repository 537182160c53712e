package main

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
)

// TestDaemonAdjust: the daemon serves the socket only (the default one
// when the configuration names none), without the default metrics port,
// with the default SQLite file in the user's state directory rather than
// the directory a client happened to start it in; what the configuration
// chose stays.
func TestDaemonAdjust(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	for _, tc := range []struct {
		name                 string
		set                  func(*config.Config)
		listen, metrics, dbp string
	}{
		{"defaults", func(*config.Config) {}, "unix:", config.MetricsOff, "/home/u/.local/state/mcpgate/mcpgate.db"},
		{"chosen", func(c *config.Config) {
			c.Server.Listen = "127.0.0.1:8000,unix:/run/m.sock"
			c.Metrics.Listen = "127.0.0.1:9999"
			c.Database.Path = "/srv/db.sqlite"
		}, "unix:/run/m.sock", "127.0.0.1:9999", "/srv/db.sqlite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			d := addDaemonFlags(fs)
			require.NoError(t, fs.Parse([]string{"--foreground"}))
			c := config.Default()
			tc.set(c)
			d.adjust(c, func(k string) string { return env[k] })
			assert.True(t, d.on, "--foreground alone is the daemon, attached")
			assert.False(t, d.detach())
			assert.Equal(t, tc.listen, c.Server.Listen)
			assert.Equal(t, tc.metrics, c.Metrics.Listen)
			assert.Equal(t, tc.dbp, c.Database.Path)
			assert.Equal(t, config.DefaultIdleExit, d.idleExit)
			require.NoError(t, c.Validate())
		})
	}
}
