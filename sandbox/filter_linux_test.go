package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilterAssembles: the deny list names only system calls this
// architecture has, and fits a BPF program.
func TestFilterAssembles(t *testing.T) {
	f, err := filter()
	require.NoError(t, err)
	assert.NotEmpty(t, f)
	assert.Less(t, len(f), 4096, "BPF_MAXINSNS")
}

// TestRulesSkipMissingPaths: a path that does not exist is left out rather
// than failing the worker's start (system paths differ between
// distributions); files and directories get rules of their kind.
func TestRulesSkipMissingPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	rs := rules(Spec{Read: []string{dir, filepath.Join(dir, "missing")}, Write: []string{file}, Connect: []uint16{443}}, "")
	assert.Len(t, rs, 3)
	rs = rules(Spec{Connect: []uint16{443}, ConnectAny: true}, "")
	assert.Empty(t, rs, "with any port, no port rule")
}

// TestDeniedListIsDocumented: every system call of the deny list is in
// docs/sandbox.md.
func TestDeniedListIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "sandbox.md"))
	require.NoError(t, err)
	for _, d := range Denied {
		for _, n := range d.Names {
			assert.True(t, strings.Contains(string(doc), "`"+n+"`"), "%s is not in docs/sandbox.md", n)
		}
	}
	for _, n := range []string{"clone3", "personality", "IPPROTO_MPTCP", "int 0x80"} {
		assert.Contains(t, string(doc), n)
	}
}

// TestApplyRequireRefusesOlderKernel: with Require, a kernel short of the
// whole rule set gets ErrUnsupported before anything is applied (this
// test process stays unconfined, which the next test would notice).
func TestApplyRequireRefusesOlderKernel(t *testing.T) {
	orig := probe
	probe = func() Support { return Support{LandlockABI: 5, Seccomp: true} }
	t.Cleanup(func() { probe = orig })
	before, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	_, err = Apply(Spec{Require: true})
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "scoping")
	after, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	field := func(status []byte, name string) string {
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, name+":") {
				return l
			}
		}
		return ""
	}
	for _, f := range []string{"NoNewPrivs", "Seccomp", "Seccomp_filters"} {
		assert.Equal(t, field(before, f), field(after, f))
	}
}
