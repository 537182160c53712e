package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpgate/mcpgate/local"
)

// unixPrefix starts a server.listen entry that names a Unix socket.
const unixPrefix = "unix:"

// ListenAddresses are server.listen's entries: a TCP host:port, a Unix
// socket (unix:PATH, or unix: for the per-user default path), or one of
// each.
func (c *Config) ListenAddresses() []string { return splitList(c.Server.Listen) }

// TCPListen is server.listen's TCP address, or "" when it names a socket
// only.
func (c *Config) TCPListen() string {
	for _, a := range c.ListenAddresses() {
		if !strings.HasPrefix(a, unixPrefix) {
			return a
		}
	}
	return ""
}

// SocketListen is server.listen's Unix socket entry (unix:PATH or unix:),
// or "" when it names none.
func (c *Config) SocketListen() string {
	for _, a := range c.ListenAddresses() {
		if strings.HasPrefix(a, unixPrefix) {
			return a
		}
	}
	return ""
}

// SocketPath is the path of a unix: listen entry: its own, or the
// per-user default (local.DefaultPath) for unix: alone.
func SocketPath(entry string, getenv func(string) string) (string, error) {
	p := strings.TrimPrefix(entry, unixPrefix)
	if p == "" {
		return local.DefaultPath(getenv)
	}
	return p, nil
}

// SystemSocket reports whether the socket is open to other accounts
// (server.unix_allowed_users is set).
func (c *Config) SystemSocket() bool { return len(c.Server.UnixAllowedUsers) > 0 }

// UnixRules resolves server.unix_allowed_users to the socket's access
// rules: each entry's toolsets become their tools, as for auth.policies.
func (c *Config) UnixRules() ([]local.Rule, error) {
	var rules []local.Rule
	for i, u := range c.Server.UnixAllowedUsers {
		r := local.Rule{User: u.User, Group: u.Group, ReadOnly: u.ReadOnly}
		if len(u.Toolsets) > 0 || len(u.Tools) > 0 {
			tools, err := c.policyTools(Policy{Toolsets: u.Toolsets, Tools: u.Tools})
			if err != nil {
				return nil, fmt.Errorf("config: server.unix_allowed_users[%d]: %w", i, err)
			}
			r.Tools = tools
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// validateListen checks server.listen's entries: at most one TCP address
// and one socket, a socket path absolute; and the local mode's keys.
func (c *Config) validateListen(v *validator) {
	var tcp, unix int
	for _, a := range c.ListenAddresses() {
		if !strings.HasPrefix(a, unixPrefix) {
			tcp++
			continue
		}
		unix++
		if p := strings.TrimPrefix(a, unixPrefix); p != "" && !filepath.IsAbs(p) {
			v.add("server.listen", "%q: a socket path must be absolute (unix:/run/mcpgate/mcpgate.sock), or unix: alone for the per-user default", a)
		}
	}
	switch {
	case tcp+unix == 0:
		v.add("server.listen", "is empty; give host:port (%s), a socket (unix:), or one of each", DefaultListen)
	case tcp > 1 || unix > 1:
		v.add("server.listen", "%q lists more than one TCP address or more than one socket; give at most one of each", c.Server.Listen)
	}
	if c.Server.IdleExit < 0 {
		v.add("server.idle_exit", "%v is negative; use a duration such as 5m (0 means the default)", c.Server.IdleExit)
	}
	if c.SystemSocket() && unix == 0 {
		v.add("server.unix_allowed_users", "is set, but server.listen names no socket; add unix:/run/mcpgate/mcpgate.sock to it")
	}
	for i, u := range c.Server.UnixAllowedUsers {
		key := fmt.Sprintf("server.unix_allowed_users[%d]", i)
		if (u.User == "") == (u.Group == "") {
			v.add(key, "names %s; give either user: ACCOUNT or group: GROUP", map[bool]string{true: "neither a user nor a group", false: "both a user and a group"}[u.User == ""])
		}
		if len(u.Toolsets) > 0 || len(u.Tools) > 0 {
			if _, err := c.policyTools(Policy{Toolsets: u.Toolsets, Tools: u.Tools}); err != nil {
				v.add(key, "%v", err)
			}
		}
	}
}
