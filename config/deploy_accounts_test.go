package config

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnitRunAsUserDropIn: the systemd drop-in for worker.run_as user
// grants exactly the capabilities the gateway checks for (worker's
// CanSwitch), in both the bounding and the ambient set, allows the system
// calls the switch makes, and leaves DynamicUser.
func TestUnitRunAsUserDropIn(t *testing.T) {
	f, err := os.Open("../deploy/mcpgate.service.d/run-as-user.conf")
	require.NoError(t, err)
	defer f.Close()
	set := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, line)
		set[k] = v
	}
	require.NoError(t, sc.Err())
	caps := "CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL"
	assert.Equal(t, caps, set["CapabilityBoundingSet"])
	assert.Equal(t, caps, set["AmbientCapabilities"])
	assert.Equal(t, "@setuid @chown", set["SystemCallFilter"])
	assert.Equal(t, "no", set["DynamicUser"])
	assert.NotEmpty(t, set["User"])
	assert.Equal(t, "0711", set["StateDirectoryMode"])
}
