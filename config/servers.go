package config

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ServerEntry is one MCP server of the servers list, served at
// /mcp/<name> with its own RFC 9728 resource (docs/gateway.md, Several
// servers). It is a built-in worker (no Command, no URL), a stdio MCP
// server (Command) or a remote Streamable HTTP MCP server (URL), which
// the gateway reaches through a per-user `mcpgate upstream` worker.
//
// Inheritance: how workers run (worker.run_as and the accounts,
// worker.sandbox, worker.limits, worker.pool_size, worker.env, worker.dir,
// worker.sessions) comes from the top-level worker section, which an entry
// overrides key by key (Limits field by field, Env appended after the
// top-level list); worker.sessions unset takes each server's own default
// (SharedSessions). worker.credentials is refused beside a servers list.
// What the server is (Command, Toolsets, SafeTools, SafeMethods,
// IdentityOnStdin, Sessions, Policies) and the credentials its workers
// get (Credentials: each names one downstream service) are the entry's
// alone. A built-in entry
// without Database uses the top-level database section; with one, that
// section replaces it whole (its unset keys take their defaults).
// RequiredScopes, WriteScope, ExtraScopes and InitialScopes left unset
// take the top-level auth keys; ReadOnly adds to server.read_only.
type ServerEntry struct {
	// Name is the server's path element (/mcp/<name>): a DNS label of
	// lower-case letters, digits and hyphens, starting with a letter.
	Name string `mapstructure:"name"`
	// Title is the server's serverInfo.title and RFC 9728 resource_name.
	Title string `mapstructure:"title"`

	// Command, Env, Dir, Toolsets, SafeTools, SafeMethods,
	// IdentityOnStdin, Limits and PoolSize are the worker keys
	// (worker.*) for this server.
	Command         []string     `mapstructure:"command"`
	Env             []string     `mapstructure:"env"`
	Dir             string       `mapstructure:"dir"`
	Toolsets        []string     `mapstructure:"toolsets"`
	SafeTools       []string     `mapstructure:"safe_tools"`
	SafeMethods     []string     `mapstructure:"safe_methods"`
	IdentityOnStdin bool         `mapstructure:"identity_on_stdin"`
	Limits          WorkerLimits `mapstructure:"limits"`
	// PoolSize overrides worker.pool_size; unset (nil) inherits it.
	PoolSize *int `mapstructure:"pool_size"`
	// Sessions is worker.sessions for this server: whether its worker
	// can host sessions is a property of the server, so it is the entry's
	// alone (unset: the default for its kind).
	Sessions string `mapstructure:"sessions"`
	// Credentials are this server's worker.credentials: each names one
	// downstream service, so they are the entry's alone. A remote server
	// (URL) takes header credentials, a stdio one env and env_file.
	Credentials []WorkerCredential `mapstructure:"credentials"`
	// Database is the built-in worker's database (the database.* keys);
	// nil uses the top-level database section.
	Database *Database `mapstructure:"database"`

	// URL is a remote Streamable HTTP MCP server: http(s), https off
	// loopback. Not with Command.
	URL string `mapstructure:"url"`
	// HeadersFile is a file of HTTP header lines ("Name: value") sent to
	// URL with every request, mode 0600; its contents are never logged.
	HeadersFile string `mapstructure:"headers_file"`
	// CAFile is a PEM file of CA certificates URL's certificate may chain
	// to, beside the system roots.
	CAFile string `mapstructure:"ca_file"`

	// RequiredScopes, WriteScope, ExtraScopes, InitialScopes and Policies
	// are as in auth, for this server's resource alone.
	RequiredScopes []string `mapstructure:"required_scopes"`
	WriteScope     string   `mapstructure:"write_scope"`
	ExtraScopes    []string `mapstructure:"extra_scopes"`
	InitialScopes  []string `mapstructure:"initial_scopes"`
	Policies       []Policy `mapstructure:"policies"`
	// ReadOnly makes every session of this server read-only.
	ReadOnly bool `mapstructure:"read_only"`
}

// ReservedServerNames are the names a server may not take: the top-level
// paths the gateway serves, so that no path or metadata URL of a server
// can be mistaken for one of them by a proxy rule or a reader.
var ReservedServerNames = []string{"mcp", "admin", "healthz", "readyz", "metrics", "well-known", "oauth-protected-resource"}

// serverNameRE is a DNS label that starts with a letter; "--" is refused
// apart (it reads as a separator in combined tool names).
var serverNameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// CheckServerName reports what makes name unusable as a server's name, or
// "".
func CheckServerName(name string) string {
	switch {
	case name == "":
		return "is empty; name the server (its path is /mcp/<name>)"
	case !serverNameRE.MatchString(name):
		return fmt.Sprintf("%q is not a DNS label: use 1 to 63 of a-z 0-9 -, starting with a letter and ending with a letter or digit", name)
	case strings.Contains(name, "--"):
		return fmt.Sprintf("%q holds \"--\"; use single hyphens", name)
	case slices.Contains(ReservedServerNames, name):
		return fmt.Sprintf("%q is reserved (a path the gateway serves); choose another name", name)
	}
	return ""
}

// ServerNameOf returns the name of the server a gateway URL serves, when
// its path ends /mcp/<name> with a valid name; "" otherwise (/mcp itself,
// another path, not a URL).
func ServerNameOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	dir, name := path.Split(strings.TrimSuffix(u.Path, "/"))
	if !strings.HasSuffix(dir, "/mcp/") || CheckServerName(name) != "" {
		return ""
	}
	return name
}

// ServerConfigs returns the MCP servers the gateway serves, each as the
// configuration it runs from: without a servers list, c itself (the one
// server at /mcp); with one, for each entry, c with the entry's keys in
// place of the top-level ones (ServerEntry says which). Call it on a
// loaded configuration.
func (c *Config) ServerConfigs() []*Config {
	if len(c.Servers) == 0 {
		return []*Config{c}
	}
	out := make([]*Config, len(c.Servers))
	for i := range c.Servers {
		out[i] = c.forServer(&c.Servers[i])
	}
	return out
}

// Entry is the servers entry this configuration was made from by
// ServerConfigs; nil for the top-level configuration.
func (c *Config) Entry() *ServerEntry { return c.entry }

// RemoteURL is the url of the remote server this configuration serves;
// "" for a built-in or command server, and for the one at /mcp.
func (c *Config) RemoteURL() string {
	if c.entry == nil {
		return ""
	}
	return c.entry.URL
}

// ServerName is the configured name of the server this configuration
// serves: "" for the one at /mcp.
func (c *Config) ServerName() string {
	if c.entry == nil {
		return ""
	}
	return c.entry.Name
}

// MountPath is the path the server is served at: /mcp, or /mcp/<name>.
func (c *Config) MountPath() string {
	if c.entry == nil {
		return "/mcp"
	}
	return "/mcp/" + c.entry.Name
}

// external reports whether the worker is not the built-in one: a command
// of the operator's, or the upstream worker of a remote server.
func (c *Config) external() bool {
	return len(c.Worker.Command) > 0 || c.RemoteURL() != ""
}

// forServer is c with e's keys in place of the top-level ones.
func (c *Config) forServer(e *ServerEntry) *Config {
	s := *c
	s.Servers = nil
	s.entry = e
	if e.Title != "" {
		s.Server.Title = e.Title
	}
	s.Server.ReadOnly = c.Server.ReadOnly || e.ReadOnly
	w := &s.Worker
	w.Command = slices.Clone(e.Command)
	w.Toolsets, w.SafeTools, w.SafeMethods = slices.Clone(e.Toolsets), slices.Clone(e.SafeTools), slices.Clone(e.SafeMethods)
	w.IdentityOnStdin = e.IdentityOnStdin
	w.Sessions = e.Sessions
	w.Credentials = slices.Clone(e.Credentials)
	w.Env = slices.Concat(c.Worker.Env, e.Env)
	if e.Dir != "" {
		w.Dir = e.Dir
	}
	lv, ev := reflect.ValueOf(&w.Limits).Elem(), reflect.ValueOf(e.Limits)
	for i := range ev.NumField() {
		if !ev.Field(i).IsZero() {
			lv.Field(i).Set(ev.Field(i))
		}
	}
	if e.PoolSize != nil {
		w.PoolSize = *e.PoolSize
	}
	if e.Database != nil {
		s.Database = *e.Database
	}
	if e.URL != "" {
		s.Worker.Sandbox = remoteSandbox(c.Worker.Sandbox, e)
	}
	a := &s.Auth
	if e.RequiredScopes != nil {
		a.RequiredScopes = slices.Clone(e.RequiredScopes)
	}
	if e.ExtraScopes != nil {
		a.ExtraScopes = slices.Clone(e.ExtraScopes)
	}
	if e.InitialScopes != nil {
		a.InitialScopes = slices.Clone(e.InitialScopes)
	}
	a.Policies = slices.Clone(e.Policies)
	switch {
	case e.WriteScope != "":
		a.WriteScope = e.WriteScope
	case len(e.Policies) > 0:
		a.WriteScope = "" // a policy decides; the top-level write scope is not this server's
	}
	s.applyDefaults()
	return &s
}

// remoteSandbox is sb widened for a remote server's upstream worker, as
// the built-in worker's is for its database: it may connect to the URL's
// port and read the headers and CA files (by absolute path).
func remoteSandbox(sb WorkerSandbox, e *ServerEntry) WorkerSandbox {
	if u, err := url.Parse(e.URL); err == nil {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if port != "" {
			sb.Connect = slices.Concat(sb.Connect, []string{port})
		}
	}
	read := slices.Clone(sb.ReadPaths)
	for _, f := range []string{e.HeadersFile, e.CAFile} {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			read = append(read, abs)
		}
	}
	sb.ReadPaths = read
	return sb
}

// serverKey is one key of a servers entry: its name within the entry
// (limits.memory) and Go type.
type serverKey = key

// ServerKeys returns the name of every key of a servers entry, in the
// order of ServerEntry (limits.* and database.* are the groups).
func ServerKeys() []string {
	var names []string
	for _, k := range serverKeys() {
		names = append(names, k.name)
	}
	return names
}

var serverKeys = sync.OnceValue(func() []serverKey {
	var keys []serverKey
	t := reflect.TypeFor[ServerEntry]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, ft := f.Tag.Get("mapstructure"), f.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			for _, k := range appendKeys(nil, name, ft) {
				keys = append(keys, k)
			}
			continue
		}
		keys = append(keys, serverKey{name: name, typ: f.Type})
	}
	return keys
})

// normalizeServers checks and normalises the file's servers list: each
// entry a mapping of known keys (unknown ones are reported, with the
// closest known key, and dropped), env and command in their list form.
func normalizeServers(path string, val any) []error {
	list, ok := val.([]any)
	if !ok {
		return []error{fmt.Errorf("config: %s: servers must be a list of servers (each a mapping with a name), not %s", path, yamlKind(val))}
	}
	byName := map[string]serverKey{}
	for _, k := range serverKeys() {
		byName[k.name] = k
	}
	// command and env read as worker.command and worker.env do.
	for _, n := range []string{"command", "env"} {
		k := byName[n]
		k.name = "worker." + n
		byName[n] = k
	}
	var errs []error
	for i, ev := range list {
		m, ok := ev.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("config: %s: servers[%d] must be a mapping of its keys (name, command or url, …), not %s", path, i, yamlKind(ev)))
			list[i] = map[string]any{}
			continue
		}
		at := fmt.Sprintf("servers[%d]", i)
		errs = append(errs, normalizeMapping(path, at, "", byName, m, func(leaf string) error {
			return unknownServerKey(path, at+"."+leaf, leaf, byName)
		})...)
	}
	return errs
}

// unknownServerKey names an unknown key of a servers entry and the known
// one probably meant.
func unknownServerKey(path, at, leaf string, byName map[string]serverKey) error {
	best, bestDist := "", 4
	for name := range byName {
		if d := editDistance(leaf, name); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	if best != "" {
		return fmt.Errorf("config: %s: %s: unknown key (did you mean %q?)", path, at, best)
	}
	return fmt.Errorf("config: %s: %s: unknown key; the keys of a server are listed in docs/configuration.md", path, at)
}
