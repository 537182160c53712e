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

// TestCredentialFeed: the last set sent is the one Header returns, a
// credential as large as the gateway takes (credential.MaxSecretBytes)
// included; a set that is not valid headers fails every request until a
// valid one comes, and the error holds no value.
func TestCredentialFeed(t *testing.T) {
	set := func(h http.Header) credential.Set { return credential.Set{Header: h} }
	feed, file, err := credential.NewHeaderFeed(set(http.Header{"Authorization": {"Bearer one"}}))
	require.NoError(t, err)
	defer feed.Close()
	defer file.Close()
	cf, err := bridge.NewCredentialFeed(int(file.Fd()))
	require.NoError(t, err)
	h, err := cf.Header()
	require.NoError(t, err)
	assert.Equal(t, "Bearer one", h.Get("Authorization"))

	big := "Bearer " + strings.Repeat("x", credential.MaxSecretBytes)
	require.NoError(t, feed.Send(set(http.Header{"Authorization": {"Bearer two"}})))
	require.NoError(t, feed.Send(set(http.Header{"Authorization": {big}, "X-Api-Key": {"k"}})))
	h, err = cf.Header()
	require.NoError(t, err)
	assert.Equal(t, big, h.Get("Authorization"), "the last of the sets waiting")
	assert.Equal(t, "k", h.Get("X-Api-Key"))

	require.NoError(t, feed.Send(set(http.Header{"Host": {"secret-value"}})))
	_, err = cf.Header()
	require.ErrorIs(t, err, bridge.ErrCredentialFeed)
	assert.NotContains(t, err.Error(), "secret-value")
	_, err = cf.Header()
	assert.Error(t, err, "still refused: the bad set is not half used, nor the old one kept")

	require.NoError(t, feed.Send(set(http.Header{"Authorization": {"Bearer three"}})))
	h, err = cf.Header()
	require.NoError(t, err)
	assert.Equal(t, "Bearer three", h.Get("Authorization"))
}
