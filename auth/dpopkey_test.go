package auth_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestDPoPProofAllocations: a proof by a key the resource has seen before
// is checked without reading its jwk again, and its JWS without a general
// JOSE library: the allocations of a DPoP request stay within a bound a
// JWK reader alone would pass. An allocation count, not a time: it does
// not depend on the machine's load.
func TestDPoPProofAllocations(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	const runs = 20
	reqs := make([]*http.Request, runs+2)
	for i := range reqs {
		reqs[i] = proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now()))
	}
	_, err := e.a.Authenticate(reqs[0]) // the token and the key, cached
	require.NoError(t, err)
	i := 1
	allocs := testing.AllocsPerRun(runs, func() {
		if _, err := e.a.Authenticate(reqs[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	t.Logf("%v allocations", allocs)
	assert.LessOrEqual(t, allocs, 250.0)
}
