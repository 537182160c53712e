package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/tools"
)

// topLevelServerKeys are the keys that describe the one server at /mcp,
// and so mean nothing beside a servers list: each entry names its own.
var topLevelServerKeys = []struct {
	key, entry string
	set        func(c *Config) bool
}{
	{"worker.command", "command", func(c *Config) bool { return len(c.Worker.Command) > 0 }},
	{"worker.toolsets", "toolsets", func(c *Config) bool { return len(c.Worker.Toolsets) > 0 }},
	{"worker.safe_tools", "safe_tools", func(c *Config) bool { return len(c.Worker.SafeTools) > 0 }},
	{"worker.safe_methods", "safe_methods", func(c *Config) bool { return len(c.Worker.SafeMethods) > 0 }},
	{"worker.identity_on_stdin", "identity_on_stdin", func(c *Config) bool { return c.Worker.IdentityOnStdin }},
	{"worker.sessions", "sessions", func(c *Config) bool { return c.Worker.Sessions != "" }},
	{"worker.credentials", "credentials", func(c *Config) bool { return len(c.Worker.Credentials) > 0 }},
	{"auth.policies", "policies", func(c *Config) bool { return len(c.Auth.Policies) > 0 }},
}

// validateServers reports the problems of the servers list: names, the
// form of each entry, and every problem of the configuration each entry
// makes (ServerConfigs) under the entry's keys. A problem an entry inherits
// from a top-level key is reported once, under that key.
func (c *Config) validateServers(v *validator, top []error) {
	if len(c.Servers) == 0 {
		return
	}
	for _, k := range topLevelServerKeys {
		if k.set(c) {
			v.add(k.key, "describes the one server at /mcp, and servers is set; give each server its own (servers[].%s) and remove %s", k.entry, k.key)
		}
	}
	seen := map[string]int{}
	inherited := map[string]bool{}
	for _, p := range Problems(errors.Join(top...)) {
		inherited[p.Key+"\x00"+p.Message] = true
	}
	for i := range c.Servers {
		e := &c.Servers[i]
		at := fmt.Sprintf("servers[%d]", i)
		if msg := CheckServerName(e.Name); msg != "" {
			v.add(at+".name", "%s", msg)
		} else if j, dup := seen[e.Name]; dup {
			v.add(at+".name", "%q is the name of servers[%d] too; each server needs its own path", e.Name, j)
		} else {
			seen[e.Name] = i
		}
		if hasControl(e.Title) {
			v.add(at+".title", "must not contain control characters")
		}
		c.validateEntryForm(v, at, e)
		s := c.forServer(e)
		for _, p := range Problems(s.Validate()) {
			if inherited[p.Key+"\x00"+p.Message] {
				continue
			}
			if k, ok := entryKey(e, p.Key); ok {
				v.add(at+"."+k, "%s", entryWords(p.Message))
			} else {
				v.add(at, "%s: %s", p.Key, p.Message)
			}
		}
	}
	c.validateServerPolicies(v)
}

// validateEntryForm reports what makes an entry neither a built-in, a
// command nor a remote server.
func (c *Config) validateEntryForm(v *validator, at string, e *ServerEntry) {
	if e.URL == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"headers_file", e.HeadersFile != ""}, {"ca_file", e.CAFile != ""}} {
			if k.set {
				v.add(at+"."+k.key, "applies to a remote server (url) only; remove it")
			}
		}
	} else {
		if len(e.Command) > 0 {
			v.add(at+".url", "is set beside command: a server is either a stdio command or a remote url, not both; remove one")
		}
		if msg := checkServerURL(e.URL); msg != "" {
			v.add(at+".url", "%s", msg)
		}
		if e.Sessions == SessionsShared {
			v.add(at+".sessions", "%s: a remote server's worker relays one upstream session and hosts no others; remove it (a process per session)", SessionsShared)
		}
		if e.IdentityOnStdin {
			v.add(at+".identity_on_stdin", "applies to a command; the gateway starts a remote server's worker itself, so remove it")
		}
		if e.HeadersFile != "" {
			if msg := checkReadable(e.HeadersFile); msg != "" {
				v.add(at+".headers_file", "%s", msg)
			} else if fi, err := os.Stat(e.HeadersFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
				v.add(at+".headers_file", "%q is readable by others (mode %#o); it holds credentials: chmod 600 it", e.HeadersFile, fi.Mode().Perm())
			}
		}
		if e.CAFile != "" {
			if msg := checkReadable(e.CAFile); msg != "" {
				v.add(at+".ca_file", "%s; give a PEM file of the CA that signed the server's certificate", msg)
			}
		}
	}
	if len(e.Command) > 0 || e.URL != "" {
		if len(e.Toolsets) > 0 {
			v.add(at+".toolsets", "names built-in toolsets, and this server is not the built-in worker (it has a command or url); remove it")
		}
		if e.Database != nil {
			v.add(at+".database", "is the built-in worker's database, and this server is not the built-in worker (it has a command or url); remove it")
		}
	}
}

// checkServerURL reports what makes u unusable as a remote server's URL,
// or "": http(s) with a host, https unless the host is loopback, no user
// info or fragment (a credential goes in headers_file).
func checkServerURL(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https"):
		return fmt.Sprintf("%q is not an http(s) URL such as https://mcp.example.com/mcp", u)
	case p.User != nil:
		return "must not carry user info; put a credential in headers_file"
	case p.Fragment != "" || strings.Contains(u, "#"):
		return fmt.Sprintf("%q has a fragment; remove it", u)
	case p.Scheme == "http" && !auth.IsLoopbackHost(p.Hostname()):
		return fmt.Sprintf("%q is plain http off loopback; use https", u)
	}
	return ""
}

// entryKeyOf maps the top-level keys an entry sets to the entry's own.
var entryKeyOf = map[string]string{
	"worker.command": "command", "worker.env": "env", "worker.dir": "dir", "worker.toolsets": "toolsets",
	"worker.safe_tools": "safe_tools", "worker.safe_methods": "safe_methods",
	"worker.identity_on_stdin": "identity_on_stdin", "worker.pool_size": "pool_size",
	"worker.sessions": "sessions", "worker.credentials": "credentials",
	"auth.required_scopes": "required_scopes", "auth.write_scope": "write_scope", "auth.extra_scopes": "extra_scopes",
	"auth.initial_scopes": "initial_scopes", "auth.policies": "policies",
	"server.read_only": "read_only", "server.title": "title",
}

// entryKey is the key of entry e under which a problem the configuration
// made from e reports under key belongs; false when e does not set it.
func entryKey(e *ServerEntry, key string) (string, bool) {
	base, rest := key, ""
	if i := strings.IndexAny(key, "["); i >= 0 {
		base, rest = key[:i], key[i:]
	}
	if k, ok := entryKeyOf[base]; ok {
		return k + rest, true
	}
	if l, ok := strings.CutPrefix(key, "worker.limits."); ok {
		return "limits." + l, true
	}
	if strings.HasPrefix(key, "database.") && e.Database != nil {
		return key, true
	}
	return "", false
}

// entryWords renames the top-level keys a message names to an entry's.
func entryWords(msg string) string {
	for _, k := range []string{"worker.command", "worker.toolsets", "worker.safe_tools", "worker.safe_methods", "worker.sessions", "worker.credentials", "auth.policies", "auth.write_scope"} {
		msg = strings.ReplaceAll(msg, k, entryKeyOf[k])
	}
	return msg
}

// validateServerPolicies reports a policy that names a tool of another
// server rather than one of its own: the rule would grant nothing where
// it stands. A built-in server's tools are its toolsets'; a command's or a
// remote server's known tools are its safe_tools.
func (c *Config) validateServerPolicies(v *validator) {
	known := make([][]string, len(c.Servers))
	for i, e := range c.Servers {
		if len(e.Command) == 0 && e.URL == "" {
			known[i], _ = tools.ToolNames(e.Toolsets)
		} else {
			known[i] = e.SafeTools
		}
	}
	for i, e := range c.Servers {
		for j, p := range e.Policies {
			for _, t := range p.Tools {
				if slices.Contains(known[i], t) {
					continue
				}
				var others []string
				for o := range c.Servers {
					if o != i && slices.Contains(known[o], t) {
						others = append(others, c.Servers[o].Name)
					}
				}
				if len(others) > 0 {
					sort.Strings(others)
					v.add(fmt.Sprintf("servers[%d].policies[%d].tools", i, j), "%q is a tool of server %s, not of %q; put the rule under that server", t, strings.Join(others, ", "), e.Name)
				}
			}
		}
	}
}
