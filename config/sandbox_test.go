package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSandboxKeys: worker.sandbox.connect takes YAML numbers, strings and
// the one word any; validation refuses relative paths, a port out of
// range, any beside ports and require without the sandbox.
func TestSandboxKeys(t *testing.T) {
	load := func(t *testing.T, yaml string, env map[string]string) *Config {
		c, err := Loader{Getenv: func(k string) string { return env[k] }}.Load(writeFile(t, "f.yaml", yaml), nil)
		require.NoError(t, err)
		return c
	}
	t.Run("defaults", func(t *testing.T) {
		c := load(t, "", nil)
		assert.True(t, c.Worker.Sandbox.Enabled)
		ports, any := c.Worker.Sandbox.ConnectPorts()
		assert.Empty(t, ports)
		assert.False(t, any)
	})
	t.Run("ports as numbers and strings", func(t *testing.T) {
		c := load(t, "worker:\n  sandbox:\n    connect: [5432, \"443\"]\n    read_paths: [/opt/srv]\n", nil)
		require.NoError(t, c.Validate())
		ports, any := c.Worker.Sandbox.ConnectPorts()
		assert.Equal(t, []uint16{5432, 443}, ports)
		assert.False(t, any)
		assert.Equal(t, []string{"/opt/srv"}, c.Worker.Sandbox.ReadPaths)
	})
	t.Run("any written out", func(t *testing.T) {
		c := load(t, "", map[string]string{"MCPGATE_WORKER_SANDBOX_CONNECT": "any"})
		require.NoError(t, c.Validate())
		_, any := c.Worker.Sandbox.ConnectPorts()
		assert.True(t, any)
	})
	for _, c := range []struct{ name, yaml, key, msg string }{
		{"relative read path", "worker:\n  sandbox:\n    read_paths: [opt/srv]\n", "worker.sandbox.read_paths", "not an absolute path"},
		{"relative write path", "worker:\n  sandbox:\n    write_paths: [./data]\n", "worker.sandbox.write_paths", "not an absolute path"},
		{"port 0", "worker:\n  sandbox:\n    connect: [0]\n", "worker.sandbox.connect", "neither a TCP port"},
		{"port too large", "worker:\n  sandbox:\n    connect: [65536]\n", "worker.sandbox.connect", "neither a TCP port"},
		{"a word", "worker:\n  sandbox:\n    connect: [https]\n", "worker.sandbox.connect", "neither a TCP port"},
		{"any beside ports", "worker:\n  sandbox:\n    connect: [443, any]\n", "worker.sandbox.connect", "write any alone"},
		{"require without the sandbox", "worker:\n  sandbox:\n    enabled: false\n    require: true\n", "worker.sandbox.require", "enabled is false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := load(t, c.yaml, nil).Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.key)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}
