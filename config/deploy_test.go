package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The files under deploy/ are loaded and validated here so that they can
// never drift from the loader, the validator or each other.

func TestDeployLocalhostIsTheDefaults(t *testing.T) {
	c, err := Loader{Getenv: env(nil)}.Load("../deploy/localhost.yaml", nil)
	require.NoError(t, err)
	assert.Equal(t, Default(), c, "deploy/localhost.yaml must spell out exactly the defaults")
	require.NoError(t, c.Validate())

	// And it must spell out every key, as docs/configuration.md says.
	m, errs := readFile("../deploy/localhost.yaml")
	require.Empty(t, errs)
	for _, k := range Keys() {
		parts := strings.Split(k, ".")
		sm := m
		for _, p := range parts[:len(parts)-1] {
			sm, _ = sm[p].(map[string]any)
		}
		_, ok := sm[parts[len(parts)-1]]
		assert.True(t, ok, "deploy/localhost.yaml does not name %s", k)
	}
}

func TestDeployAuthServer(t *testing.T) {
	f := newFixture(t)
	c, err := Loader{Getenv: env(map[string]string{
		"MCPGATE_TLS_CERT_FILE": f.cert,
		"MCPGATE_TLS_KEY_FILE":  f.key,
	})}.Load("../deploy/auth-server.yaml", nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())

	assert.Equal(t, "0.0.0.0:8443", c.Server.Listen)
	assert.Equal(t, "https://mcp.example.com/mcp", c.Resource())
	assert.Equal(t, "https://keycloak.example.com/realms/mcp", c.Auth.Issuer)
	assert.Equal(t, []string{"mcp:use"}, c.Auth.RequiredScopes)
	assert.Equal(t, "mcp:write", c.Auth.WriteScope)
	assert.Equal(t, []string{"profile", "offline_access"}, c.Auth.ExtraScopes)
	assert.Equal(t, "preferred_username", c.Auth.UserClaim)
	assert.False(t, c.Loopback())

	assert.Equal(t, WorkerLimits{AddressSpace: 4 << 30, CPUTime: time.Hour, OpenFiles: 1024, Memory: 512 << 20, CPU: 1, Processes: 64}, c.Worker.Limits)

	// Without the override the file names the paths `mcpgate certs` writes.
	raw, err := Loader{Getenv: env(nil)}.Load("../deploy/auth-server.yaml", nil)
	require.NoError(t, err)
	assert.Equal(t, TLS{CertFile: "certs/cert.pem", KeyFile: "certs/key.pem", ClientAuth: ClientAuthOff}, raw.TLS)
}

// TestDeployKubernetes: the gateway's configuration in the Kubernetes base
// loads and validates with what the StatefulSet puts in the environment
// (the pod name as the replica id, the DSN from a Secret).
func TestDeployKubernetes(t *testing.T) {
	f := newFixture(t)
	c, err := Loader{Getenv: env(map[string]string{
		"MCPGATE_TLS_CERT_FILE":     f.cert,
		"MCPGATE_TLS_KEY_FILE":      f.key,
		"MCPGATE_SERVER_REPLICA_ID": "mcpgate-0",
		"MCPGATE_DATABASE_DSN":      "postgres://mcpgate@db.example.com/mcpgate",
	})}.Load("../deploy/k8s/base/mcpgate.yaml", nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, "mcpgate-0", c.Server.ReplicaID)
	assert.Equal(t, "postgres", c.Database.Driver)
	assert.Equal(t, "https://mcp.example.com/mcp", c.Resource())
	assert.False(t, c.Loopback())
	// Every worker bounded by default, with the limits a pod can apply.
	l := c.Worker.Limits
	assert.NotZero(t, l.AddressSpace, "worker.limits.address_space")
	assert.NotZero(t, l.CPUTime, "worker.limits.cpu_time")
	assert.NotZero(t, l.OpenFiles, "worker.limits.open_files")
	assert.True(t, l.Memory == 0 && l.CPU == 0 && l.Processes == 0, "the cgroup limits need a delegated cgroup, which a pod lacks")
}

// realm is the part of a Keycloak realm representation the tests read.
type realm struct {
	Realm                       string   `json:"realm"`
	DefaultDefaultClientScopes  []string `json:"defaultDefaultClientScopes"`
	DefaultOptionalClientScopes []string `json:"defaultOptionalClientScopes"`
	ScopeMappings               []struct {
		ClientScope string   `json:"clientScope"`
		Roles       []string `json:"roles"`
	} `json:"scopeMappings"`
	ClientScopes []struct {
		Name            string            `json:"name"`
		Description     string            `json:"description"`
		Protocol        string            `json:"protocol"`
		Attributes      map[string]string `json:"attributes"`
		ProtocolMappers []struct {
			Name           string            `json:"name"`
			ProtocolMapper string            `json:"protocolMapper"`
			Config         map[string]string `json:"config"`
		} `json:"protocolMappers"`
	} `json:"clientScopes"`
	Clients []struct {
		ClientID                  string            `json:"clientId"`
		Description               string            `json:"description"`
		PublicClient              bool              `json:"publicClient"`
		StandardFlowEnabled       bool              `json:"standardFlowEnabled"`
		ImplicitFlowEnabled       bool              `json:"implicitFlowEnabled"`
		DirectAccessGrantsEnabled bool              `json:"directAccessGrantsEnabled"`
		ServiceAccountsEnabled    bool              `json:"serviceAccountsEnabled"`
		RedirectURIs              []string          `json:"redirectUris"`
		Attributes                map[string]string `json:"attributes"`
		Secret                    string            `json:"secret"`
		DefaultClientScopes       []string          `json:"defaultClientScopes"`
		OptionalClientScopes      []string          `json:"optionalClientScopes"`
	} `json:"clients"`
	Roles struct {
		Realm []struct {
			Name string `json:"name"`
		} `json:"realm"`
	} `json:"roles"`
	Users []struct {
		Username               string   `json:"username"`
		Email                  string   `json:"email"`
		FirstName              string   `json:"firstName"`
		LastName               string   `json:"lastName"`
		ServiceAccountClientID string   `json:"serviceAccountClientId"`
		RealmRoles             []string `json:"realmRoles"`
		RequiredActions        []string `json:"requiredActions"`
		Credentials            []struct {
			Temporary bool `json:"temporary"`
		} `json:"credentials"`
	} `json:"users"`
}

func TestDeployKeycloakRealm(t *testing.T) {
	data, err := os.ReadFile("../deploy/keycloak/realm-mcp.json")
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var r realm
	require.NoError(t, dec.Decode(&r))

	f := newFixture(t)
	cfg, err := Loader{Getenv: env(map[string]string{"MCPGATE_TLS_CERT_FILE": f.cert, "MCPGATE_TLS_KEY_FILE": f.key})}.Load("../deploy/auth-server.yaml", nil)
	require.NoError(t, err)

	t.Run("realm matches the issuer", func(t *testing.T) {
		assert.Equal(t, "mcp", r.Realm)
		assert.True(t, strings.HasSuffix(cfg.Auth.Issuer, "/realms/"+r.Realm), "auth.issuer %q names another realm", cfg.Auth.Issuer)
	})

	scopes := map[string]int{}
	for i, s := range r.ClientScopes {
		scopes[s.Name] = i
		assert.Equal(t, "openid-connect", s.Protocol, "scope %s", s.Name)
		// Keycloak's DESCRIPTION column is 255 characters; longer fails the import.
		assert.LessOrEqual(t, len(s.Description), 255, "scope %s description", s.Name)
	}
	// Keycloak creates offline_access itself on import; everything else a
	// client or the realm references must be defined here, because a realm
	// file with clientScopes gets none of Keycloak's built-in ones.
	known := func(name string) bool { _, ok := scopes[name]; return ok || name == "offline_access" }

	t.Run("mcp scopes are in the token's scope claim", func(t *testing.T) {
		for _, name := range append(slices.Clone(cfg.Auth.RequiredScopes), cfg.Auth.WriteScope) {
			i, ok := scopes[name]
			require.True(t, ok, "client scope %s missing", name)
			assert.Equal(t, "true", r.ClientScopes[i].Attributes["include.in.token.scope"], "scope %s", name)
		}
	})

	t.Run("audience mapper on mcp:use names the resource", func(t *testing.T) {
		var audiences, clientAudiences []string
		for _, m := range r.ClientScopes[scopes["mcp:use"]].ProtocolMappers {
			if m.ProtocolMapper == "oidc-audience-mapper" {
				if a := m.Config["included.custom.audience"]; a != "" {
					audiences = append(audiences, a)
				}
				if a := m.Config["included.client.audience"]; a != "" {
					clientAudiences = append(clientAudiences, a)
				}
				assert.Equal(t, "true", m.Config["access.token.claim"])
			}
		}
		assert.Equal(t, []string{cfg.Resource()}, audiences)
		// Standard token exchange: the subject token names the exchanging
		// client (the gateway's) among its audiences.
		assert.Equal(t, []string{"mcpgate-gateway"}, clientAudiences)
	})

	t.Run("sub and preferred_username are emitted", func(t *testing.T) {
		mapper := func(scope, kind, claim string) bool {
			i, ok := scopes[scope]
			if !ok {
				return false
			}
			for _, m := range r.ClientScopes[i].ProtocolMappers {
				if m.ProtocolMapper == kind && (claim == "" || m.Config["claim.name"] == claim) {
					return true
				}
			}
			return false
		}
		assert.True(t, mapper("basic", "oidc-sub-mapper", ""), "basic must carry the sub mapper (Keycloak 25+)")
		assert.True(t, mapper("profile", "oidc-usermodel-attribute-mapper", cfg.Auth.UserClaim), "profile must emit %s", cfg.Auth.UserClaim)
	})

	t.Run("advertised scopes exist", func(t *testing.T) {
		for _, s := range append(append(slices.Clone(cfg.Auth.RequiredScopes), cfg.Auth.WriteScope), cfg.Auth.ExtraScopes...) {
			assert.True(t, known(s), "scope %s is advertised but not in the realm", s)
		}
		for _, s := range append(slices.Clone(r.DefaultDefaultClientScopes), r.DefaultOptionalClientScopes...) {
			assert.True(t, known(s), "realm default scope %s is not defined", s)
		}
		assert.Contains(t, r.DefaultDefaultClientScopes, "mcp:use", "dynamically registered clients need mcp:use")
	})

	t.Run("mcp:write only for mcp-writer", func(t *testing.T) {
		require.Len(t, r.ScopeMappings, 2)
		assert.Equal(t, "mcp:write", r.ScopeMappings[0].ClientScope)
		assert.Equal(t, []string{"mcp-writer"}, r.ScopeMappings[0].Roles)
	})

	t.Run("the example policy's scopes and roles are the realm's", func(t *testing.T) {
		ex := examplePolicies(t, f)
		roles := map[string]bool{}
		for _, role := range r.Roles.Realm {
			roles[role.Name] = true
		}
		mapped := map[string][]string{}
		for _, m := range r.ScopeMappings {
			mapped[m.ClientScope] = m.Roles
		}
		for i, p := range ex.Auth.Policies {
			if p.Scope != "" {
				assert.True(t, known(p.Scope), "rule %d: scope %s is not in the realm", i, p.Scope)
				assert.True(t, slices.Contains(r.DefaultDefaultClientScopes, p.Scope) || slices.Contains(r.DefaultOptionalClientScopes, p.Scope),
					"rule %d: scope %s must be a realm default or optional scope, or the registration policy refuses it to dynamic clients", i, p.Scope)
				continue
			}
			assert.Equal(t, "realm_access.roles", p.Claim, "rule %d", i)
			for _, v := range p.Values {
				assert.True(t, roles[v], "rule %d: role %s is not a realm role", i, v)
			}
		}
		assert.Equal(t, []string{"mcp-developer"}, mapped["mcp:develop"], "mcp:develop only for developers")
		assert.Contains(t, r.DefaultDefaultClientScopes, "mcp:read", "every user is a reader")
		emitsRoles := false
		for _, m := range r.ClientScopes[scopes["mcp:use"]].ProtocolMappers {
			emitsRoles = emitsRoles || (m.ProtocolMapper == "oidc-usermodel-realm-role-mapper" && m.Config["claim.name"] == "realm_access.roles" && m.Config["access.token.claim"] == "true")
		}
		assert.True(t, emitsRoles, "mcp:use (on every token) must emit realm_access.roles for the admin rule")
	})

	clients := map[string]int{}
	for i, c := range r.Clients {
		clients[c.ClientID] = i
		assert.Empty(t, c.Secret, "client %s: no secret in a committed file", c.ClientID)
		assert.False(t, c.ImplicitFlowEnabled, "client %s", c.ClientID)
		assert.False(t, c.DirectAccessGrantsEnabled, "client %s: OAuth 2.1 has no password grant", c.ClientID)
		assert.LessOrEqual(t, len(c.Description), 255, "client %s description", c.ClientID)
		for _, s := range append(slices.Clone(c.DefaultClientScopes), c.OptionalClientScopes...) {
			assert.True(t, known(s), "client %s references undefined scope %s", c.ClientID, s)
		}
	}

	t.Run("the gateway's client exchanges tokens for github-mcp", func(t *testing.T) {
		i, ok := clients["mcpgate-gateway"]
		require.True(t, ok)
		c := r.Clients[i]
		assert.False(t, c.PublicClient)
		assert.False(t, c.StandardFlowEnabled || c.ServiceAccountsEnabled, "no flow of its own")
		assert.Equal(t, "true", c.Attributes["standard.token.exchange.enabled"])
		require.Contains(t, c.DefaultClientScopes, "github-mcp", "the audience must be available to the exchanging client")
		_, ok = clients["github-mcp"]
		assert.True(t, ok, "the audience names a client of the realm")
		found := false
		for _, m := range r.ClientScopes[scopes["github-mcp"]].ProtocolMappers {
			found = found || m.ProtocolMapper == "oidc-audience-mapper" && m.Config["included.client.audience"] == "github-mcp"
		}
		assert.True(t, found, "scope github-mcp carries the audience mapper of github-mcp")
	})

	t.Run("confidential client for client credentials", func(t *testing.T) {
		i, ok := clients["mcpgate-ci"]
		require.True(t, ok)
		c := r.Clients[i]
		assert.False(t, c.PublicClient)
		assert.True(t, c.ServiceAccountsEnabled)
		assert.False(t, c.StandardFlowEnabled)
		assert.Subset(t, c.DefaultClientScopes, []string{"mcp:use", "mcp:write", "profile", "basic"})
	})

	t.Run("public client with PKCE", func(t *testing.T) {
		i, ok := clients["mcpgate-cli"]
		require.True(t, ok)
		c := r.Clients[i]
		assert.True(t, c.PublicClient)
		assert.True(t, c.StandardFlowEnabled)
		assert.False(t, c.ServiceAccountsEnabled)
		assert.Equal(t, "S256", c.Attributes["pkce.code.challenge.method"])
		assert.Contains(t, c.RedirectURIs, "http://127.0.0.1/*")
		assert.Contains(t, c.DefaultClientScopes, "mcp:use")
		assert.Contains(t, c.OptionalClientScopes, "mcp:write")
	})

	t.Run("demo users", func(t *testing.T) {
		roles := map[string]bool{"offline_access": true}
		for _, role := range r.Roles.Realm {
			roles[role.Name] = true
		}
		users := map[string]bool{}
		for _, u := range r.Users {
			users[u.Username] = true
			for _, role := range u.RealmRoles {
				assert.True(t, roles[role], "user %s has undefined role %s", u.Username, role)
			}
			if u.ServiceAccountClientID != "" {
				_, ok := clients[u.ServiceAccountClientID]
				assert.True(t, ok, "service account %s of unknown client", u.Username)
				continue
			}
			// Keycloak's user profile asks for these on first login otherwise.
			assert.NotEmpty(t, u.Email, u.Username)
			assert.NotEmpty(t, u.FirstName, u.Username)
			assert.NotEmpty(t, u.LastName, u.Username)
			assert.Empty(t, u.RequiredActions, u.Username)
			require.NotEmpty(t, u.Credentials, u.Username)
			for _, c := range u.Credentials {
				assert.False(t, c.Temporary, "user %s: a temporary password stops a headless login", u.Username)
			}
		}
		assert.True(t, users["alice"] && users["bob"], "got users %v", users)
	})
}

// examplePolicies loads deploy/auth-server.yaml with its commented
// auth.policies example switched on (write_scope off, as the comment says)
// and validates it.
func examplePolicies(t *testing.T, f fixture) *Config {
	t.Helper()
	data, err := os.ReadFile("../deploy/auth-server.yaml")
	require.NoError(t, err)
	var out []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(line, "# BEGIN policies example"):
			in = true
			continue
		case strings.Contains(line, "# END policies example"):
			in = false
			continue
		case in:
			line = strings.Replace(line, "# ", "", 1)
		case strings.HasPrefix(strings.TrimSpace(line), "write_scope:"):
			continue
		}
		out = append(out, line)
	}
	require.False(t, in, "no END marker")
	path := filepath.Join(t.TempDir(), "policies.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644))
	c, err := Loader{Getenv: env(map[string]string{"MCPGATE_TLS_CERT_FILE": f.cert, "MCPGATE_TLS_KEY_FILE": f.key})}.Load(path, nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Len(t, c.Auth.Policies, 3)
	return c
}

// TestUnitStopTimeoutCoversDrain: systemd must not SIGKILL the gateway
// while it drains and stops its workers with the shipped settings.
func TestUnitStopTimeoutCoversDrain(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "deploy", "mcpgate.service"))
	require.NoError(t, err)
	var stop time.Duration
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "TimeoutStopSec="); ok {
			stop, err = time.ParseDuration(v)
			require.NoError(t, err)
		}
	}
	c, err := Loader{Getenv: env(nil)}.Load("../deploy/auth-server.yaml", nil)
	require.NoError(t, err)
	assert.Greater(t, stop, c.Limits.DrainTimeout+c.Limits.WorkerStopGrace, "TimeoutStopSec")
	assert.Greater(t, stop, DefaultDrainTimeout+DefaultWorkerStopGrace, "TimeoutStopSec")
	assert.Contains(t, string(data), "\nDelegate=memory cpu pids\n")
}
