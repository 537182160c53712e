package oauthclient

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWantDPoPAuto: auto asks for DPoP-bound tokens when the resource
// offers them, in its metadata or by a DPoP challenge alone (a server that
// takes only DPoP sends no Bearer one, RFC 9449 §7.1, and may say nothing
// of DPoP in its metadata), and its authorization server can bind ES256
// keys; never otherwise.
func TestWantDPoPAuto(t *testing.T) {
	es256 := ServerMetadata{DPoPSigningAlgs: []string{"ES256"}}
	for _, tc := range []struct {
		name string
		d    Discovery
		want bool
	}{
		{"metadata requires it", Discovery{Resource: ResourceMetadata{DPoPBoundRequired: true}, Server: es256}, true},
		{"metadata lists algs", Discovery{Resource: ResourceMetadata{DPoPSigningAlgs: []string{"ES256"}}, Server: es256}, true},
		{"a DPoP challenge alone", Discovery{Challenge: `DPoP resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp"`, Server: es256}, true},
		{"a DPoP challenge beside Bearer", Discovery{Challenge: `Bearer resource_metadata="x", DPoP algs="ES256"`, Server: es256}, true},
		{"a Bearer challenge, metadata silent", Discovery{Challenge: `Bearer resource_metadata="x"`, Server: es256}, false},
		{"DPoP in a parameter value only", Discovery{Challenge: `Bearer error_description="DPoP algs"`, Server: es256}, false},
		{"an issuer that cannot bind ES256", Discovery{Challenge: `DPoP algs="ES256"`, Server: ServerMetadata{DPoPSigningAlgs: []string{"RS256"}}}, false},
		{"an issuer that binds nothing", Discovery{Challenge: `DPoP algs="ES256"`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wantDPoP("auto", &tc.d)
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
