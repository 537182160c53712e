package sandbox

import (
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
