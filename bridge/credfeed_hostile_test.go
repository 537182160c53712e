//go:build linux

package bridge_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/bridge"
	"github.com/mcpgate/mcpgate/credential"
)

// TestCredentialFeedHostileSets: a set the gateway sends reaches the
// worker whole or is refused by the gateway, never cut down: no value
// smuggles a second header in (a CR, LF or NUL), a name the worker's
// reader would take for a comment is refused rather than dropped, and a
// set as large as a message may be arrives intact while one byte more is
// refused before it is sent.
func TestCredentialFeedHostileSets(t *testing.T) {
	set := func(h http.Header) credential.Set { return credential.Set{Header: h} }
	feed, file, err := credential.NewHeaderFeed(set(http.Header{"Authorization": {"Bearer one"}}))
	require.NoError(t, err)
	defer feed.Close()
	defer file.Close()
	cf, err := bridge.NewCredentialFeed(int(file.Fd()))
	require.NoError(t, err)

	for _, h := range []http.Header{
		{"X-Key": {"v\r\nAuthorization: Bearer stolen"}},
		{"X-Key": {"v\nAuthorization: Bearer stolen"}},
		{"X-Key": {"v\rAuthorization: Bearer stolen"}},
		{"X-Key": {"v\x00Authorization: Bearer stolen"}},
		{"X-Key: v\nAuthorization": {"Bearer stolen"}},
		{"#X-Key": {"secret-value"}},
	} {
		err := feed.Send(set(h))
		if assert.Error(t, err, "%q", h) {
			assert.NotContains(t, err.Error(), "secret-value")
			assert.NotContains(t, err.Error(), "stolen")
		}
		got, err := cf.Header()
		require.NoError(t, err)
		assert.Equal(t, http.Header{"Authorization": {"Bearer one"}}, got, "the worker keeps the set it had")
	}

	// "X-Key: " + value + "\n" is the whole message.
	fill := strings.Repeat("v", credential.MaxHeaderFeedBytes-len("X-Key: \n"))
	require.NoError(t, feed.Send(set(http.Header{"X-Key": {fill}})))
	got, err := cf.Header()
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-Key": {fill}}, got)
	assert.Error(t, feed.Send(set(http.Header{"X-Key": {fill + "v"}})))
	got, err = cf.Header()
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-Key": {fill}}, got)
}

// TestCredentialFeedEmptySet: a set with no header, which the gateway
// sends as an empty message, replaces the one the worker held, as any
// set does: the worker does not go on sending the old credential.
func TestCredentialFeedEmptySet(t *testing.T) {
	feed, file, err := credential.NewHeaderFeed(credential.Set{Header: http.Header{"Authorization": {"Bearer old"}}})
	require.NoError(t, err)
	defer feed.Close()
	defer file.Close()
	cf, err := bridge.NewCredentialFeed(int(file.Fd()))
	require.NoError(t, err)
	_, err = cf.Header()
	require.NoError(t, err)
	for _, empty := range []http.Header{{}, {"X-Key": {}}} {
		if err := feed.Send(credential.Set{Header: empty}); err != nil {
			continue // refused by the gateway: the caller replaces the worker
		}
		h, err := cf.Header()
		if err == nil {
			assert.Empty(t, h.Get("Authorization"), "the old credential outlived the set that replaced it")
		}
	}
}
