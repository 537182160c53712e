package main

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/sandbox"
)

// TestSandboxCredentialsStayPrivate: what worker.credentials relies on
// when workers share the gateway's account: a confined worker reads its
// own credential file (a memfd at /proc/self/fd/3) but not another
// process's environment, which a worker without the sandbox can.
func TestSandboxCredentialsStayPrivate(t *testing.T) {
	needSandboxHost(t)
	hostile, err := hostileWorker()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	other := exec.Command("sleep", "600")
	other.Env = []string{"OTHER_USERS_TOKEN=secret"}
	require.NoError(t, other.Start())
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })

	start := func(confine bool) func(tool string, args map[string]any) string {
		files, _, err := credential.Set{Files: []credential.File{{Env: "TOKEN_FILE", Value: []byte("mine")}}}.OpenFiles()
		require.NoError(t, err)
		cmd := exec.Command(hostile)
		if confine {
			spec := sandbox.External(sandbox.Spec{}, hostile, "")
			cmd = exec.Command(exe, limitHelperCommand, sandbox.ArgPrefix+spec.Encode(), "--", hostile, hostile)
		}
		cmd.ExtraFiles = files
		cs := startStdio(t, cmd)
		for _, f := range files {
			f.Close()
		}
		return func(tool string, args map[string]any) string { return callText(t, cs, tool, args) }
	}
	confined, free := start(true), start(false)
	environ := "/proc/" + strconv.Itoa(other.Process.Pid) + "/environ"
	assert.Equal(t, "ok", confined("read", map[string]any{"path": "/proc/self/fd/3"}), "its own credential file")
	assert.Equal(t, "errno EACCES", confined("read", map[string]any{"path": environ}), "another process's environment")
	assert.Equal(t, "ok", free("read", map[string]any{"path": environ}), "without the sandbox")
}
