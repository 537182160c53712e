package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
)

// TestSharedSessionsRefuseCredentials: a worker that hosts sessions is
// started for them without a credential, and one holding a credential is
// retired when it is due, which would end the sessions in it: the two
// options are refused together, as the configuration refuses
// worker.sessions: shared beside worker.credentials.
func TestSharedSessionsRefuseCredentials(t *testing.T) {
	b, err := credential.New("svc", credential.Options{Credentials: []credential.Credential{{Env: "TOKEN", From: "static", Path: "/etc/hostname"}}}, nil)
	require.NoError(t, err)
	err = Options{SharedSessions: true, Credentials: b}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SharedSessions")
	assert.NoError(t, Options{SharedSessions: true}.Validate())
	assert.NoError(t, Options{Credentials: b}.Validate())
}
