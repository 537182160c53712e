//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/sandbox"
)

// TestSandboxKeepsSetuidFromRaisingWorker: a worker under a user's account
// that execs a set-user-ID root program stays the user under the sandbox
// (no_new_privs: the exec ignores the bit), where without the sandbox the
// same worker, as the same account, runs the program as root.
func TestSandboxKeepsSetuidFromRaisingWorker(t *testing.T) {
	requireRoot(t)
	needSandboxHost(t)
	// A directory every account may reach and execute from, holding the
	// workers' programs: the helper (this test binary, whose own directory
	// only root may enter), the hostile worker and the set-user-ID program.
	dir := t.TempDir()
	reachable(t, filepath.Join(dir, "x"))
	require.NoError(t, os.Chmod(dir, 0o755))
	exe, err := os.Executable()
	require.NoError(t, err)
	helper := filepath.Join(dir, "mcpgate")
	copyFile(t, exe, helper, 0o755)
	hostile, err := hostileWorker()
	require.NoError(t, err)
	reachable(t, hostile)
	suid := filepath.Join(dir, "printeuid")
	out, err := exec.Command("go", "build", "-o", suid, "github.com/mcpgate/mcpgate/sandbox/internal/printeuid").CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, os.Chown(suid, 0, 0))
	// After the chown, which clears the bit.
	require.NoError(t, os.Chmod(suid, os.ModeSetuid|0o755))

	uid, _ := testUIDs(8, 1)
	as := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
		return cmd
	}
	got, err := as(exec.Command(suid)).Output()
	require.NoError(t, err)
	require.Equal(t, "euid 0", string(got), "the account runs the program as root")
	spec := sandbox.External(sandbox.Spec{Read: []string{dir}}, hostile, "")
	confined := startStdio(t, as(exec.Command(helper, limitHelperCommand, sandbox.ArgPrefix+spec.Encode(), "--", hostile, hostile)))
	free := startStdio(t, as(exec.Command(hostile)))
	args := map[string]any{"path": suid}
	assert.Equal(t, fmt.Sprintf("euid %d", uid), callText(t, confined, "setuid", args), "under the sandbox")
	assert.Equal(t, "euid 0", callText(t, free, "setuid", args), "without the sandbox")
}
