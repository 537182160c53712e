package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecRoundTrip(t *testing.T) {
	s := Spec{Profile: ProfileExternal, Require: true, Read: []string{"/usr"}, Write: []string{"/var/lib/x"}, Connect: []uint16{443}}
	got, err := Decode(s.Encode())
	require.NoError(t, err)
	assert.Equal(t, s, got)

	_, err = Decode(`{"write":["data"]}`)
	assert.ErrorContains(t, err, "not absolute", "a relative path would be the worker's, not the gateway's")
	_, err = Decode(`{"read":`)
	assert.Error(t, err)
}

// TestApplyArgLeavesOtherArgs: the helper's first argument is a Spec only
// when it says so.
func TestApplyArgLeavesOtherArgs(t *testing.T) {
	args := []string{"nofile=64", "--", "/bin/true", "true"}
	got, err := ApplyArg(args)
	require.NoError(t, err)
	assert.Equal(t, args, got)
	_, err = ApplyArg([]string{ArgPrefix + "{", "--", "/bin/true"})
	assert.Error(t, err, "a Spec that does not parse is refused, not skipped")
}

// TestRefusals: strace lines of refused calls, each once, without the Go
// runtime's epoll_ctl noise or clone3's ENOSYS.
func TestRefusals(t *testing.T) {
	trace := `1234  openat(AT_FDCWD, "/etc/shadow", O_RDONLY|O_CLOEXEC) = -1 EACCES (Permission denied)
1234  epoll_ctl(4, EPOLL_CTL_ADD, 3, {events=EPOLLIN}) = -1 EPERM (Operation not permitted)
1235  clone3({flags=CLONE_VM, exit_signal=0}, 88) = -1 ENOSYS (Function not implemented)
1234  openat(AT_FDCWD, "/etc/shadow", O_RDONLY|O_CLOEXEC) = -1 EACCES (Permission denied)
1236  connect(5, {sa_family=AF_INET, sin_port=htons(443)}, 16) = -1 EACCES (Permission denied)
1236  ptrace(PTRACE_SEIZE, 1, NULL, 0) = -1 EPERM (Operation not permitted)
1236  openat(AT_FDCWD, "/nonexistent", O_RDONLY) = -1 ENOENT (No such file or directory)
`
	got, err := Refusals(strings.NewReader(trace))
	require.NoError(t, err)
	assert.Equal(t, []string{
		`openat(AT_FDCWD, "/etc/shadow", O_RDONLY|O_CLOEXEC) = EACCES`,
		`connect(5, {sa_family=AF_INET, sin_port=htons(443)}, 16) = EACCES`,
		`ptrace(PTRACE_SEIZE, 1, NULL, 0) = EPERM`,
	}, got)
}
