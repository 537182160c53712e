package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubHelper builds the stub worker, whose exec-limited is the rlimit
// helper here: this test binary may be built with -race, and the race
// detector's shadow memory leaves no room under an address-space limit.
var stubHelper = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpgate-stub-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "stubworker")
	if out, err := exec.Command("go", "build", "-o", path, "github.com/mcpgate/mcpgate/worker/internal/stubworker").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the stub worker: %v\n%s", err, out)
	}
	return path, nil
})

// startLimited starts a shell script under limits, through this binary as
// the helper, and returns the lines it writes.
func startLimited(t *testing.T, l Limits, script string) (*Process, <-chan string) {
	t.Helper()
	helper, err := stubHelper()
	require.NoError(t, err)
	p, err := StartProcess(ProcessConfig{Command: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Logger: quiet, Limits: l, LimitHelper: []string{helper, "exec-limited"}})
	require.NoError(t, err)
	lines := make(chan string, 16)
	go func() {
		_ = p.ReadLoop(func(b, _ []byte) { lines <- string(b) }, func([]byte, int) {})
		close(lines)
	}()
	t.Cleanup(func() { _ = p.Stop(context.Background(), 0) })
	return p, lines
}

// TestRlimitsHoldFromTheStart: the worker's very first look at its limits
// sees them (set before exec, not after Start).
func TestRlimitsHoldFromTheStart(t *testing.T) {
	p, lines := startLimited(t, Limits{AddressSpace: 1 << 30, OpenFiles: 64, CPUTime: 90 * time.Second},
		`echo "$(ulimit -n) $(ulimit -v) $(ulimit -t)"`)
	assert.Equal(t, "64 1048576 90", <-lines) // ulimit -v is in KiB
	<-p.Done()
	assert.NoError(t, p.ExitErr())
	assert.Empty(t, p.Limit(), "a clean exit is no limit's doing")
}

// TestCPUTimeLimitNamed: a worker that spins past cpu_time is stopped and
// the limit named.
func TestCPUTimeLimitNamed(t *testing.T) {
	p, _ := startLimited(t, Limits{CPUTime: time.Second}, `while :; do :; done`)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the spinning worker was not stopped")
	}
	assert.Equal(t, LimitCPUTime, p.Limit(), "exit: %s", ExitDescription(p.ExitErr()))
}

// TestNoHelperNoStart: rlimits without a helper are a start error, not a
// worker without limits.
func TestNoHelperNoStart(t *testing.T) {
	_, err := StartProcess(ProcessConfig{Command: []string{"sh", "-c", "true"}, Limits: Limits{OpenFiles: 64}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no limit helper")
}

func TestExecLimitedRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"as=1", "sh"},                   // no --
		{"--", "/bin/sh"},                // no argv
		{"as=x", "--", "/bin/sh", "sh"},  // not a number
		{"as=0", "--", "/bin/sh", "sh"},  // zero
		{"mem=1", "--", "/bin/sh", "sh"}, // unknown
	} {
		assert.Error(t, ExecLimited(args, nil), "%q", args)
	}
}

func TestOutOfMemoryLines(t *testing.T) {
	for _, l := range []string{"fatal error: runtime: out of memory", "MemoryError", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory", "mmap: Cannot allocate memory"} {
		assert.True(t, outOfMemory(l), l)
	}
	assert.False(t, outOfMemory("select 1"))
}

// fakeCgroup writes a cgroup v2 directory as the kernel would show it.
func fakeCgroup(t *testing.T, controllers string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.procs": "4242\n4343\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

func TestCgroupDelegation(t *testing.T) {
	t.Run("not delegated", func(t *testing.T) {
		_, err := prepareCgroup(fakeCgroup(t, "cpu io"))
		require.ErrorIs(t, err, ErrNotDelegated)
		assert.Contains(t, err.Error(), "controller memory")
	})
	t.Run("delegated", func(t *testing.T) {
		dir := fakeCgroup(t, "cpuset cpu io memory pids")
		cg, err := prepareCgroup(dir)
		require.NoError(t, err)
		sub, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		assert.Equal(t, "+memory +cpu +pids", string(sub))
		moved, _ := os.ReadFile(filepath.Join(dir, "gateway", "cgroup.procs"))
		assert.Equal(t, "4343", string(moved), "each process written to the gateway's leaf (the kernel keeps them all)")

		lf, err := cg.newLeaf(Limits{Memory: 256 << 20, CPU: 0.5, Processes: 32})
		require.NoError(t, err)
		for file, want := range map[string]string{"memory.max": "268435456", "memory.swap.max": "0", "cpu.max": "50000 100000", "pids.max": "32"} {
			got, err := os.ReadFile(filepath.Join(lf.dir, file))
			require.NoError(t, err, file)
			assert.Equal(t, want, string(got), file)
		}
		assert.False(t, lf.oomKilled())
		require.NoError(t, os.WriteFile(filepath.Join(lf.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644))
		assert.True(t, lf.oomKilled())
		lf.closeFD()
	})
}

func TestOwnCgroupDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	mi := write("mountinfo", strings.Join([]string{
		"22 1 0:21 / /proc rw - proc proc rw",
		"30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw",
	}, "\n"))
	got, err := ownCgroupDir(mi, write("cg1", "0::/system.slice/mcpgate.service\n"))
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/system.slice/mcpgate.service", got)

	_, err = ownCgroupDir(mi, write("cg2", "0::/\n"))
	assert.True(t, errors.Is(err, ErrNotDelegated), "the root cgroup is never divided")
	_, err = ownCgroupDir(mi, write("cg3", "4:memory:/x\n"))
	assert.True(t, errors.Is(err, ErrNotDelegated), "cgroup v1 only")

	// Inside a cgroup namespace the mount's root is the namespace's.
	mi2 := write("mountinfo2", "30 25 0:26 /system.slice/mcpgate.service /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	got, err = ownCgroupDir(mi2, write("cg4", "0::/system.slice/mcpgate.service/gateway\n"))
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/gateway", got)
}
