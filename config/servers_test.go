package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
)

// writeYAML writes a configuration file and returns its path.
func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcpgate.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

const serversYAML = `
server:
  public_url: https://mcp.example.com
auth:
  issuer: https://kc.example.com/realms/mcp
  required_scopes: [mcp:use]
  write_scope: mcp:write
worker:
  env: {HTTPS_PROXY: "http://proxy:3128"}
  pool_size: 2
  limits:
    memory: 512MiB
    open_files: 1024
database:
  statement_timeout: 10s
servers:
  - name: db
    title: The database
    toolsets: [session, listing, browsing]
    required_scopes: [db:use]
    write_scope: db:write
    limits: {memory: 1GiB}
  - name: everything
    command: "/bin/sh -c 'exec true'"
    env: {EVERYTHING: "1"}
    safe_tools: [echo]
    pool_size: 0
    read_only: true
    database:
      path: other.db
  - name: remote
    url: https://saas.example.com/mcp
    required_scopes: []
    policies:
      - {scope: remote:use, tools: [search]}
`

// TestServersLoad: a servers list loads, and each server's configuration
// inherits the top-level worker keys it does not set.
func TestServersLoad(t *testing.T) {
	c, err := Loader{Getenv: env(nil)}.Load(writeYAML(t, serversYAML), nil)
	require.NoError(t, err)
	require.Len(t, c.Servers, 3)
	ss := c.ServerConfigs()
	require.Len(t, ss, 3)
	db, ev, rm := ss[0], ss[1], ss[2]

	assert.Equal(t, "/mcp/db", db.MountPath())
	assert.Equal(t, "https://mcp.example.com/mcp/db", db.Resource())
	assert.Equal(t, "The database", db.Server.Title)
	assert.Equal(t, []string{"db:use"}, db.Auth.RequiredScopes)
	assert.Equal(t, "db:write", db.Auth.WriteScope)
	assert.Equal(t, WorkerLimits{Memory: 1 << 30, OpenFiles: 1024}, db.Worker.Limits, "memory from the entry, open_files inherited")
	assert.Equal(t, 2, db.Worker.PoolSize)
	assert.Empty(t, db.Worker.Command)
	assert.Equal(t, 10*time.Second, db.Database.StatementTimeout, "the top-level database")
	assert.False(t, db.Server.ReadOnly)

	assert.Equal(t, []string{"/bin/sh", "-c", "exec true"}, ev.Worker.Command)
	assert.Equal(t, []string{"HTTPS_PROXY=http://proxy:3128", "EVERYTHING=1"}, ev.Worker.Env)
	assert.Equal(t, 0, ev.Worker.PoolSize, "pool_size 0 set in the entry")
	assert.True(t, ev.Server.ReadOnly)
	assert.Equal(t, []string{"mcp:use"}, ev.Auth.RequiredScopes, "inherited")
	assert.Equal(t, "mcp:write", ev.Auth.WriteScope, "inherited")
	assert.Equal(t, "other.db", ev.Database.Path)
	assert.Equal(t, DefaultStatementTimeout, ev.Database.StatementTimeout, "a database section replaces the top-level one whole")

	assert.Equal(t, "https://saas.example.com/mcp", rm.Entry().URL)
	assert.Equal(t, []string{"443"}, rm.Worker.Sandbox.Connect, "the upstream worker may reach the URL's port")
	assert.Empty(t, c.Worker.Sandbox.Connect, "and the top level is left as it was")
	assert.Empty(t, rm.Auth.RequiredScopes, "[] is none, not inherited")
	assert.Empty(t, rm.Auth.WriteScope, "a policy decides")
	rules, err := rm.PolicyRules()
	require.NoError(t, err)
	assert.Equal(t, []string{"search"}, rules[0].Tools)

	// The top-level configuration is untouched, and still its own server.
	assert.Equal(t, "https://mcp.example.com/mcp", c.Resource())
	assert.Nil(t, c.Entry())
	assert.Len(t, Default().ServerConfigs(), 1)
	assert.Equal(t, "/mcp", Default().ServerConfigs()[0].MountPath())
}

// TestServersLoadErrors: what the file gets wrong in an entry is named by
// the entry's index and key, all at once.
func TestServersLoadErrors(t *testing.T) {
	_, err := Loader{Getenv: env(nil)}.Load(writeYAML(t, `
servers:
  - name: a
    comand: [x]
    limits: {memroy: 1GiB}
  - "just a string"
  - name: b
    database: 5
`), nil)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`servers[0].comand: unknown key (did you mean "command"?)`,
		`servers[0].limits.memroy: unknown key (did you mean "limits.memory"?)`,
		`servers[1] must be a mapping of its keys`,
		`servers[2].database must be a mapping of its keys, not a number`,
	} {
		assert.Contains(t, msg, want)
	}

	_, err = Loader{Getenv: env(nil)}.Load(writeYAML(t, "servers: {name: a}\n"), nil)
	require.ErrorContains(t, err, "servers must be a list of servers")

	_, err = Loader{Getenv: env(map[string]string{"MCPGATE_SERVERS": "a b"})}.Load("", nil)
	require.ErrorContains(t, err, "config: servers (from MCPGATE_SERVERS): a list of servers is set in the file only")
}

// TestServersValidate is the table of what Validate refuses in a servers
// list: each case's problems, by key, and nothing else.
func TestServersValidate(t *testing.T) {
	f := newFixture(t)
	headers := filepath.Join(f.dir, "headers")
	require.NoError(t, os.WriteFile(headers, []byte("Authorization: Bearer x\n"), 0o644))
	good := filepath.Join(f.dir, "headers.ok")
	require.NoError(t, os.WriteFile(good, []byte("Authorization: Bearer x\n"), 0o600))

	auth := func(c *Config) *Config {
		c.Server.PublicURL = "https://mcp.example.com"
		c.Auth.Issuer = "https://kc.example.com/realms/mcp"
		return c
	}
	tests := []struct {
		name    string
		servers []ServerEntry
		mod     func(*Config)
		want    map[string]string // key: a part of its message
	}{
		{name: "valid", servers: []ServerEntry{
			{Name: "db", RequiredScopes: []string{"db:use"}, WriteScope: "db:write"},
			{Name: "ev", Command: []string{f.exe}, SafeTools: []string{"echo"}},
			{Name: "gh", URL: "https://api.example.com/mcp", HeadersFile: good, CAFile: f.cert},
		}},
		{name: "names", servers: []ServerEntry{
			{Name: "db"}, {Name: "db"}, {Name: "admin"}, {Name: "Db"}, {Name: ""}, {Name: "a--b"}, {Name: "well-known"},
		}, want: map[string]string{
			"servers[1].name": `"db" is the name of servers[0] too`,
			"servers[2].name": `"admin" is reserved`,
			"servers[3].name": `"Db" is not a DNS label`,
			"servers[4].name": "is empty",
			"servers[5].name": `holds "--"`,
			"servers[6].name": `"well-known" is reserved`,
		}},
		{name: "command and url", servers: []ServerEntry{
			{Name: "x", Command: []string{f.exe}, URL: "https://api.example.com/mcp"},
		}, want: map[string]string{"servers[0].url": "not both"}},
		{name: "bad urls", servers: []ServerEntry{
			{Name: "a", URL: "ftp://x"}, {Name: "b", URL: "http://api.example.com/mcp"},
			{Name: "c", URL: "https://u:p@api.example.com/"}, {Name: "d", URL: "http://127.0.0.1:9/mcp"},
		}, want: map[string]string{
			"servers[0].url": "is not an http(s) URL",
			"servers[1].url": "plain http off loopback",
			"servers[2].url": "must not carry user info",
		}},
		{name: "remote files", servers: []ServerEntry{
			{Name: "a", URL: "https://api.example.com/mcp", HeadersFile: headers, CAFile: filepath.Join(f.dir, "nope.pem")},
			{Name: "b", HeadersFile: good, CAFile: f.cert},
		}, want: map[string]string{
			"servers[0].headers_file": "readable by others",
			"servers[0].ca_file":      "no such file",
			"servers[1].headers_file": "remote server (url) only",
			"servers[1].ca_file":      "remote server (url) only",
		}},
		{name: "built-in keys elsewhere", servers: []ServerEntry{
			{Name: "a", Command: []string{f.exe}, Toolsets: []string{"listing"}, Database: &Database{Path: "x.db"}},
			{Name: "b", URL: "https://api.example.com/mcp", IdentityOnStdin: true},
			{Name: "c", SafeTools: []string{"query"}, IdentityOnStdin: true},
		}, want: map[string]string{
			"servers[0].toolsets":          "not the built-in worker",
			"servers[0].database":          "not the built-in worker",
			"servers[1].identity_on_stdin": "starts a remote server's worker itself",
			"servers[2].safe_tools":        "applies to an external command only",
			"servers[2].identity_on_stdin": "applies to an external command only",
		}},
		{name: "entry worker and database keys", servers: []ServerEntry{
			{Name: "a", Command: []string{"no-such-program-anywhere"}, Env: []string{"MCPGATE_WORKER_USER=root"}},
			{Name: "b", Database: &Database{Driver: "oracle"}, Toolsets: []string{"session", "session"}},
		}, want: map[string]string{
			"servers[0].command":         `"no-such-program-anywhere" is not found in PATH`,
			"servers[0].env[0]":          "is reserved",
			"servers[1].database.driver": "oracle",
			"servers[1].toolsets":        "listed twice",
		}},
		{name: "scopes without an issuer", servers: []ServerEntry{
			{Name: "a", RequiredScopes: []string{"a:use"}},
		}, mod: func(c *Config) { c.Auth.Issuer, c.Server.PublicURL = "", "" }, want: map[string]string{
			"servers[0].required_scopes": "auth.issuer is empty",
		}},
		{name: "policies", servers: []ServerEntry{
			{Name: "db", Policies: []Policy{{Scope: "db:use", Tools: []string{"echo"}}}},
			{Name: "ev", Command: []string{f.exe}, SafeTools: []string{"echo"}, Policies: []Policy{{Scope: "ev:use", Tools: []string{"query", "echo", "add"}}}},
			{Name: "x", Command: []string{f.exe}, Policies: []Policy{{Scope: "x:use", Toolsets: []string{"listing"}}}, WriteScope: "x:write"},
		}, want: map[string]string{
			"servers[0].policies[0]":       `tool "echo" is not a tool of the built-in worker's toolsets`,
			"servers[0].policies[0].tools": `"echo" is a tool of server ev, not of "db"`,
			"servers[1].policies[0].tools": `"query" is a tool of server db, not of "ev"`,
			"servers[2].policies[0]":       "toolsets name built-in toolsets, and command is an external worker",
			"servers[2].write_scope":       "policies",
		}},
		{name: "top-level keys of the one server", servers: []ServerEntry{{Name: "a"}},
			mod: func(c *Config) {
				c.Worker.Command = []string{f.exe}
				c.Worker.SafeTools = []string{"x"}
				c.Auth.Policies = []Policy{{Scope: "s", Tools: []string{"x"}}}
			}, want: map[string]string{
				"worker.command":    "servers is set",
				"worker.safe_tools": "servers is set",
				"auth.policies":     "servers is set",
			}},
		{name: "credentials per server", servers: []ServerEntry{
			{Name: "gh", URL: "https://api.example.com/mcp", HeadersFile: good, Credentials: []WorkerCredential{
				{Header: "Authorization", Prefix: "Bearer ", From: "token_exchange", Audience: "github-mcp"},
				{Env: "TOKEN", From: "static", Path: "/etc/t"},
				{Header: "Mcp-Session-Id", From: "static", Path: "/etc/t"},
			}},
			{Name: "ev", Command: []string{f.exe}, Sessions: SessionsShared, Credentials: []WorkerCredential{
				{Header: "Authorization", From: "static", Path: "/etc/t"},
				{Env: "GOOD", From: "static", Path: "/etc/t"},
			}},
			{Name: "rm", URL: "https://api.example.com/mcp", Sessions: SessionsShared},
		}, mod: func(c *Config) { c.Worker.RunAs = "user" }, want: map[string]string{
			"servers[0].credentials":           "introspection_client_id",
			"servers[0].credentials[1].env":    "a remote server gets its credentials in a header",
			"servers[0].credentials[2].header": "the gateway's relay sets itself",
			"servers[1].credentials[0].header": "a header credential is for a remote server",
			"servers[1].sessions":              "cannot be used with credentials",
			"servers[2].sessions":              "hosts no others",
			"worker.data_dir":                  "run_as user",
			"worker.group":                     "run_as",
		}},
		{name: "a server's token exchange uses the gateway's client", servers: []ServerEntry{
			{Name: "gh", URL: "https://api.example.com/mcp", Credentials: []WorkerCredential{
				{Header: "Authorization", Prefix: "Bearer ", From: "token_exchange", Audience: "github-mcp"}}},
			{Name: "db"}, // without credentials: the client is still the gateway's
		}, mod: func(c *Config) {
			c.Auth.IntrospectionClientID, c.Auth.IntrospectionClientSecretFile = "mcpgate-gateway", good
			c.Worker.Sandbox.Enabled, c.Worker.Sandbox.Require = true, true
		}},
		{name: "credentials need isolation, each server's", servers: []ServerEntry{
			{Name: "ev", Command: []string{f.exe}, Credentials: []WorkerCredential{{Env: "T", From: "static", Path: "/etc/t"}}},
			{Name: "db"},
		}, want: map[string]string{"servers[0].credentials": "readable by every other worker"}},
		{name: "top-level credentials and sessions beside servers", servers: []ServerEntry{{Name: "a"}},
			mod: func(c *Config) {
				c.Worker.Sessions = SessionsPerSession
				c.Worker.Credentials = []WorkerCredential{{Env: "T", From: "static", Path: "/etc/t"}}
				c.Worker.RunAs = "user"
			}, want: map[string]string{
				"worker.sessions":    "servers is set",
				"worker.credentials": "servers is set",
				"worker.data_dir":    "run_as user",
				"worker.group":       "run_as",
			}},
		{name: "inherited problems once, at the top", servers: []ServerEntry{{Name: "a"}, {Name: "b"}},
			mod:  func(c *Config) { c.Worker.Env = []string{"BAD NAME=1"} },
			want: map[string]string{"worker.env[0]": "is not NAME=value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := auth(Default())
			c.Servers = tt.servers
			if tt.mod != nil {
				tt.mod(c)
			}
			got := map[string][]string{}
			for _, p := range Problems(c.Validate()) {
				got[p.Key] = append(got[p.Key], p.Message)
			}
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for k, part := range tt.want {
				require.Contains(t, got, k, "problems: %v", got)
				assert.True(t, strings.Contains(strings.Join(got[k], " | "), part), "%s: got %q, want a part %q", k, got[k], part)
			}
			for _, k := range keys {
				_, wanted := tt.want[k]
				assert.True(t, wanted, "unexpected problem %s: %q", k, got[k])
				assert.Len(t, got[k], 1, "%s reported more than once: %q", k, got[k])
			}
		})
	}
}

// TestServerKeys: the keys of an entry, counted like the top-level ones.
func TestServerKeys(t *testing.T) {
	keys := ServerKeys()
	assert.Len(t, keys, 41)
	for _, k := range []string{"name", "url", "headers_file", "limits.memory", "database.dsn", "pool_size", "policies", "read_only"} {
		assert.Contains(t, keys, k)
	}
}

// TestDocsServerKeys holds the "Server entry keys" table of
// docs/configuration.md to ServerKeys, both ways.
func TestDocsServerKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "\n#### Server entry keys\n")
	require.True(t, ok, "docs/configuration.md has no Server entry keys section")
	table, _, _ = strings.Cut(table, "\n## ")
	var got []string
	inTable := false
	for line := range strings.Lines(table) {
		switch {
		case strings.HasPrefix(line, "| Entry key |"):
			inTable = true
		case inTable && strings.HasPrefix(line, "|--"):
		case inTable && strings.HasPrefix(line, "|"):
			got = append(got, strings.Trim(strings.TrimSpace(strings.Split(line, "|")[1]), "`"))
		default:
			inTable = false
		}
	}
	assert.Equal(t, ServerKeys(), got, "the table lists the keys of a servers entry in ServerEntry's order")
}

// TestDeployServers: deploy/servers.yaml loads and validates, and means
// what its comments say.
func TestDeployServers(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the example's everything server names it")
	}
	f := newFixture(t)
	c, err := Loader{Getenv: env(map[string]string{
		"MCPGATE_TLS_CERT_FILE": f.cert,
		"MCPGATE_TLS_KEY_FILE":  f.key,
	})}.Load("../deploy/servers.yaml", nil)
	require.NoError(t, err)
	require.Len(t, c.Servers, 3)
	headers := filepath.Join(f.dir, "saas.headers")
	require.NoError(t, os.WriteFile(headers, []byte("Authorization: Bearer x\n"), 0o600))
	c.Servers[2].HeadersFile = headers
	c.Servers[1].Dir = f.dir
	require.NoError(t, c.Validate())

	ss := c.ServerConfigs()
	assert.Equal(t, "https://mcp.example.com/mcp/db", ss[0].Resource())
	assert.Empty(t, ss[0].Worker.Command, "db is the built-in worker")
	assert.Equal(t, "postgres", ss[0].Database.Driver)
	assert.Equal(t, ByteSize(256<<20), ss[1].Worker.Limits.Memory)
	assert.Equal(t, ByteSize(4<<30), ss[1].Worker.Limits.AddressSpace, "inherited")
	assert.Equal(t, "everything:write", ss[1].Auth.WriteScope)
	assert.Equal(t, "https://mcp.saas.example.net/mcp", ss[2].Entry().URL)
	assert.Equal(t, []string{headers}, ss[2].Worker.Sandbox.ReadPaths, "the upstream worker reads its headers file")
	assert.Empty(t, ss[2].Auth.WriteScope)
	assert.Equal(t, []string{"profile"}, ss[2].Auth.ExtraScopes)
}

// TestServerNameOf: the server a gateway URL names, by the name rules.
func TestServerNameOf(t *testing.T) {
	for u, want := range map[string]string{
		"https://mcp.example.com/mcp/db":         "db",
		"https://mcp.example.com/prefix/mcp/db":  "db",
		"https://mcp.example.com/mcp/db/":        "db",
		"https://mcp.example.com/mcp":            "",
		"https://mcp.example.com/mcp/Not_A_Name": "",
		"https://mcp.example.com/mcp/admin":      "",
		"https://mcp.example.com/other/db":       "",
		"://":                                    "",
	} {
		assert.Equal(t, want, ServerNameOf(u), u)
	}
}

// TestServerCredentialsAndSessions: an entry's credentials and sessions
// are its own, never the top level's; a remote server's worker hosts no
// sessions, and a server with credentials keeps a process per session.
func TestServerCredentialsAndSessions(t *testing.T) {
	c := Default()
	c.Worker.Credentials = []WorkerCredential{{Env: "TOP", From: "static", Path: "/etc/top"}}
	c.Worker.Sessions = SessionsShared
	gh := []WorkerCredential{{Header: "Authorization", Prefix: "Bearer ", From: "token_exchange", Audience: "github-mcp"}}
	c.Servers = []ServerEntry{
		{Name: "db"},
		{Name: "gh", URL: "https://api.example.com/mcp", Credentials: gh},
		{Name: "ev", Command: []string{"/bin/true"}, Credentials: []WorkerCredential{{Env: "EV", From: "static", Path: "/etc/ev"}}},
		{Name: "rm", URL: "https://api.example.com/mcp"},
	}
	ss := c.ServerConfigs()
	assert.Empty(t, ss[0].Worker.Credentials, "a server without credentials gets none of the top level's")
	assert.True(t, ss[0].SharedSessions(), "the built-in worker hosts its sessions")
	assert.Equal(t, gh, ss[1].Worker.Credentials)
	assert.Equal(t, credential.Options{Credentials: []credential.Credential{credential.Credential(gh[0])}, Remote: true}, ss[1].CredentialOptions())
	assert.False(t, ss[1].SharedSessions())
	assert.Equal(t, "EV", ss[2].CredentialOptions().Credentials[0].Env)
	assert.False(t, ss[2].CredentialOptions().Remote)
	assert.False(t, ss[2].SharedSessions())
	assert.False(t, ss[3].SharedSessions(), "an upstream worker relays one session: a process per session")
	c.Servers[0].Sessions = SessionsPerSession
	assert.False(t, c.ServerConfigs()[0].SharedSessions())
}
