// Package workerproto is the contract between the gateway and a worker
// process, which both sides import: the identity a worker is started with
// (environment variables, or the identity line on stdin of a pre-started
// worker), the variables only the gateway may set, and the rules of the
// replica prefix in the ids a gateway mints. The gateway's side of a worker
// is package worker; the worker's side is package tools.
package workerproto

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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
	// EnvSessions, "true", tells a ScopeUser worker that it hosts
	// sessions: every line after the identity, either way, is a frame
	// (SessionMethod). Unset or empty, it hosts none and reads plain
	// JSON-RPC.
	EnvSessions = "MCPGATE_WORKER_SESSIONS"
)

// The values of EnvScope.
const (
	ScopeSession = "session"
	ScopeUser    = "user"
)

// IsReservedEnv reports whether name is a variable only the gateway may set
// in a worker's environment: an identity variable or EnvPrestarted.
func IsReservedEnv(name string) bool { return IsIdentityEnv(name) || name == EnvPrestarted }

// IsIdentityEnv reports whether name is one of the identity variables above.
func IsIdentityEnv(name string) bool {
	return slices.Contains(identityEnv, name)
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
	// Sessions says that the worker (ScopeUser) hosts the key's
	// 2025-11-25 sessions too, and so reads and writes frames
	// (SessionMethod) rather than plain JSON-RPC.
	Sessions bool
}

// Environ returns the identity as NAME=value pairs for a worker's environment.
func (id Identity) Environ() []string {
	env := []string{
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
	if id.Sessions {
		env = append(env, EnvSessions+"=true")
	}
	return env
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
	switch v := getenv(EnvSessions); v {
	case "":
	case "true":
		id.Sessions = true
	default:
		return Identity{}, fmt.Errorf("worker: %s=%q: want true or nothing (the gateway sets it)", EnvSessions, v)
	}
	if id.Sessions && id.Scope != ScopeUser {
		return Identity{}, fmt.Errorf("worker: %s is set for a worker of scope %q: only a %s worker hosts sessions", EnvSessions, id.Scope, ScopeUser)
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

// EnvPrestarted is the marker of a pre-started (pooled) worker: set to
// "true", it says that the worker's identity is not in its environment but
// comes as the first line on its stdin, an IdentityMethod notification the
// launcher writes when a session claims the worker, before anything of the
// session's (initialize included). A worker started with it holds no
// identity variable; one that finds both refuses to run.
const EnvPrestarted = "MCPGATE_WORKER_PRESTARTED"

// IdentityMethod is the JSON-RPC method of the identity line: a
// notification in mcpgate's own namespace, so that no MCP message can be
// taken for it.
const IdentityMethod = "mcpgate/identity"

// MaxIdentityLine bounds the identity line a pooled worker reads.
const MaxIdentityLine = 64 << 10

// identityLine is the wire form of the identity line:
//
//	{"jsonrpc":"2.0","method":"mcpgate/identity","params":{...}}
//
// user (non-empty), readOnly and tools are required (ParseIdentityLine
// refuses a line without them), and scope must be session or user; the
// other members default to empty. tools is "*" (every tool) or an array of
// tool names, so that a missing grant is never read as every tool.
type identityLine struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  *identityParams `json:"params"`
}

type identityParams struct {
	User          string          `json:"user"`
	SessionID     string          `json:"sessionId"`
	ReadOnly      *bool           `json:"readOnly"`
	Toolsets      []string        `json:"toolsets,omitempty"`
	Tools         json.RawMessage `json:"tools"`
	ServerName    string          `json:"serverName"`
	ServerVersion string          `json:"serverVersion"`
	ServerTitle   string          `json:"serverTitle,omitempty"`
	Scope         string          `json:"scope"`
	Sessions      bool            `json:"sessions,omitempty"`
}

// Line returns the identity as the identity line a pooled worker reads
// first, without its newline.
func (id Identity) Line() []byte {
	ro := id.ReadOnly
	tools := json.RawMessage(`"*"`)
	if id.Tools != nil {
		tools, _ = json.Marshal(append([]string{}, id.Tools...)) // [] rather than null
	}
	b, err := json.Marshal(identityLine{JSONRPC: "2.0", Method: IdentityMethod, Params: &identityParams{
		User: id.User, SessionID: id.SessionID, ReadOnly: &ro, Toolsets: id.Toolsets, Tools: tools,
		ServerName: id.ServerName, ServerVersion: id.ServerVersion, ServerTitle: id.ServerTitle,
		Scope: cmp.Or(id.Scope, ScopeSession), Sessions: id.Sessions,
	}})
	if err != nil {
		panic(err) // strings, bools and a RawMessage we built: cannot fail
	}
	return b
}

// ErrIdentityLine is wrapped by ParseIdentityLine's errors.
var ErrIdentityLine = errors.New("worker: the first line on stdin is not the gateway's identity line")

// ParseIdentityLine reads an identity written by Line. It is strict: an
// unknown member, a missing user or read-only flag, a read-only flag that
// is not a JSON boolean, another method, anything after the object: each is
// an error, so that nothing but the launcher's line can become an identity.
func ParseIdentityLine(line []byte) (Identity, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var l identityLine
	if err := dec.Decode(&l); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrIdentityLine, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Identity{}, fmt.Errorf("%w: data after the object", ErrIdentityLine)
	}
	if l.JSONRPC != "2.0" || l.Method != IdentityMethod || l.Params == nil {
		return Identity{}, fmt.Errorf("%w: want a %q notification with params", ErrIdentityLine, IdentityMethod)
	}
	p := l.Params
	if p.User == "" {
		return Identity{}, fmt.Errorf("%w: params.user is missing or empty", ErrIdentityLine)
	}
	if p.ReadOnly == nil {
		return Identity{}, fmt.Errorf("%w: params.readOnly is missing (true or false)", ErrIdentityLine)
	}
	switch p.Scope {
	case ScopeSession, ScopeUser:
	default:
		return Identity{}, fmt.Errorf("%w: params.scope is %q: want %s or %s", ErrIdentityLine, p.Scope, ScopeSession, ScopeUser)
	}
	if p.Sessions && p.Scope != ScopeUser {
		return Identity{}, fmt.Errorf("%w: params.sessions is true for scope %q: only a %s worker hosts sessions", ErrIdentityLine, p.Scope, ScopeUser)
	}
	id := Identity{
		User: p.User, SessionID: p.SessionID, ReadOnly: *p.ReadOnly, ServerName: p.ServerName,
		ServerVersion: p.ServerVersion, ServerTitle: p.ServerTitle, Scope: p.Scope, Sessions: p.Sessions,
	}
	for _, t := range p.Toolsets {
		if t = strings.TrimSpace(t); t != "" {
			id.Toolsets = append(id.Toolsets, t)
		}
	}
	var all string
	if err := json.Unmarshal(p.Tools, &all); err == nil && all == AllTools {
		return id, nil // Tools nil: every tool
	}
	var tools []string
	if err := json.Unmarshal(p.Tools, &tools); err != nil || tools == nil {
		return Identity{}, fmt.Errorf("%w: params.tools must be %q or an array of tool names", ErrIdentityLine, AllTools)
	}
	id.Tools = tools
	return id, nil
}

// ReadIdentityLine reads the first line of r, at most MaxIdentityLine
// bytes, and parses it (ParseIdentityLine). r must be the reader the
// worker goes on to serve from, so that nothing after the line is lost. A
// stdin closed before any byte is io.EOF: the pool stopped the worker
// unclaimed.
func ReadIdentityLine(r *bufio.Reader) (Identity, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case err == io.EOF && len(line) == 0:
		return Identity{}, io.EOF
	case errors.Is(err, bufio.ErrBufferFull):
		return Identity{}, fmt.Errorf("%w: over %d bytes", ErrIdentityLine, r.Size())
	case err != nil && err != io.EOF:
		return Identity{}, fmt.Errorf("worker: reading the identity line: %w", err)
	case err == io.EOF:
		return Identity{}, fmt.Errorf("%w: stdin ended inside it", ErrIdentityLine)
	}
	return ParseIdentityLine(bytes.TrimRight(line, "\r\n"))
}

// identityEnv lists the variables IsIdentityEnv names.
var identityEnv = []string{EnvUser, EnvSessionID, EnvReadOnly, EnvToolsets, EnvTools, EnvServerName, EnvServerVersion, EnvServerTitle, EnvScope, EnvSessions}

// CheckPooledEnv reports an error when getenv has the marker
// EnvPrestarted together with any identity variable: a pooled worker's
// identity comes from one place only.
func CheckPooledEnv(getenv func(string) string) error {
	for _, name := range identityEnv {
		if getenv(name) != "" {
			return fmt.Errorf("worker: %s is set together with %s: a pre-started worker takes its identity from stdin alone", name, EnvPrestarted)
		}
	}
	return nil
}
