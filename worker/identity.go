// Package worker is the gateway's side of a worker process: it starts one OS
// process per MCP session with the user's identity, frames JSON-RPC over the
// process's stdin and stdout, matches answers to requests, routes the worker's
// own messages, notices a crash and stops the process.
package worker

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Environment variables through which the gateway hands a worker its identity.
// They are the whole contract between the gateway and a worker process: the
// built-in worker (mcpgate worker) reads them, and an external stdio MCP
// server may read them too. A bearer token is never among them.
const (
	EnvUser          = "MCPGATE_WORKER_USER"
	EnvSessionID     = "MCPGATE_WORKER_SESSION_ID"
	EnvReadOnly      = "MCPGATE_WORKER_READ_ONLY"
	EnvToolsets      = "MCPGATE_WORKER_TOOLSETS"
	EnvTools         = "MCPGATE_WORKER_TOOLS"
	EnvServerName    = "MCPGATE_WORKER_SERVER_NAME"
	EnvServerVersion = "MCPGATE_WORKER_SERVER_VERSION"
	EnvServerTitle   = "MCPGATE_WORKER_SERVER_TITLE"
	// EnvScope tells a worker what it serves: ScopeSession (one MCP session
	// of 2025-11-25 or earlier) or ScopeUser (every MCP 2026-07-28 request
	// of one user and read-only flag, for as long as it is not idle). State
	// that must span calls in a ScopeUser worker travels in handles the
	// worker mints, which embed its EnvSessionID (its instance id).
	EnvScope = "MCPGATE_WORKER_SCOPE"
)

// The values of EnvScope.
const (
	ScopeSession = "session"
	ScopeUser    = "user"
)

// IsIdentityEnv reports whether name is one of the identity variables above.
func IsIdentityEnv(name string) bool {
	switch name {
	case EnvUser, EnvSessionID, EnvReadOnly, EnvToolsets, EnvTools, EnvServerName, EnvServerVersion, EnvServerTitle, EnvScope:
		return true
	}
	return false
}

// Identity is what the gateway tells a worker about the session it serves.
type Identity struct {
	User      string   // the user id the session runs as
	SessionID string   // the MCP session id
	ReadOnly  bool     // the session may not change anything
	Toolsets  []string // built-in toolsets to register; empty means every one
	// Tools are the only tools the session may run (the caller's policy
	// grant); nil means every tool of Toolsets, and empty means none.
	// Written as "*" for nil, so that a missing variable grants nothing.
	Tools         []string
	ServerName    string // serverInfo.name
	ServerVersion string // serverInfo.version
	ServerTitle   string // serverInfo.title; left out of serverInfo when empty
	Scope         string // ScopeSession or ScopeUser; empty means ScopeSession
}

// Environ returns the identity as NAME=value pairs for a worker's environment.
func (id Identity) Environ() []string {
	return []string{
		EnvUser + "=" + id.User,
		EnvSessionID + "=" + id.SessionID,
		EnvReadOnly + "=" + strconv.FormatBool(id.ReadOnly),
		EnvToolsets + "=" + strings.Join(id.Toolsets, ","),
		EnvTools + "=" + toolsValue(id.Tools),
		EnvServerName + "=" + id.ServerName,
		EnvServerVersion + "=" + id.ServerVersion,
		EnvServerTitle + "=" + id.ServerTitle,
		EnvScope + "=" + cmp.Or(id.Scope, ScopeSession),
	}
}

// IdentityFromEnv reads an identity written by Environ. getenv is usually
// os.Getenv. A missing or malformed read-only flag is an error rather than a
// silent read-write session.
func IdentityFromEnv(getenv func(string) string) (Identity, error) {
	ro, err := strconv.ParseBool(getenv(EnvReadOnly))
	if err != nil {
		return Identity{}, fmt.Errorf("worker: %s must be true or false (the gateway sets it; mcpgate worker is not started by hand)", EnvReadOnly)
	}
	id := Identity{
		User:          getenv(EnvUser),
		SessionID:     getenv(EnvSessionID),
		ReadOnly:      ro,
		ServerName:    getenv(EnvServerName),
		ServerVersion: getenv(EnvServerVersion),
		ServerTitle:   getenv(EnvServerTitle),
		Scope:         getenv(EnvScope),
	}
	id.Toolsets = splitList(getenv(EnvToolsets))
	if tools := getenv(EnvTools); tools != AllTools {
		id.Tools = append([]string{}, splitList(tools)...) // fail-closed: unset is none
	}
	if id.User == "" {
		return Identity{}, fmt.Errorf("worker: %s is empty (the gateway sets it; mcpgate worker is not started by hand)", EnvUser)
	}
	return id, nil
}

// AllTools is EnvTools' value for "every tool".
const AllTools = "*"

func toolsValue(tools []string) string {
	if tools == nil {
		return AllTools
	}
	return strings.Join(tools, ",")
}

func splitList(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
