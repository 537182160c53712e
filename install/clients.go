// Package install writes an MCP server entry for the gateway into the
// configuration files of MCP clients (Claude Code, Claude Desktop, Cursor,
// VS Code, Windsurf, Codex CLI, Gemini CLI), each in its own format, and
// takes it out again. Edits are idempotent, keep every byte of the file
// that is not the entry, save the previous contents as FILE.bak and
// replace the file atomically.
package install

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
)

// Scope says which of a client's files an entry goes into.
type Scope string

const (
	// User is the user's own configuration, for every project.
	User Scope = "user"
	// Project is the configuration file in a project directory, shared
	// with everyone who checks the project out.
	Project Scope = "project"
)

// Env is where a client's files are: the home directory, the project
// directory and the platform. The zero value is not usable; see DefaultEnv.
type Env struct {
	Home       string              // the user's home directory
	ProjectDir string              // the project directory for Project scope
	GOOS       string              // runtime.GOOS unless set
	Getenv     func(string) string // os.Getenv unless set (APPDATA, XDG_CONFIG_HOME, CODEX_HOME)
}

// DefaultEnv is this process's home, working directory and platform.
func DefaultEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return Env{}, err
	}
	return Env{Home: home, ProjectDir: wd, GOOS: runtime.GOOS, Getenv: os.Getenv}, nil
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

// appConfigDir is where desktop applications keep their settings:
// ~/Library/Application Support on macOS, %APPDATA% on Windows,
// $XDG_CONFIG_HOME or ~/.config elsewhere.
func (e Env) appConfigDir() string {
	switch e.goos() {
	case "darwin":
		return filepath.Join(e.Home, "Library", "Application Support")
	case "windows":
		if d := e.getenv("APPDATA"); d != "" {
			return d
		}
		return filepath.Join(e.Home, "AppData", "Roaming")
	}
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return filepath.Join(e.Home, ".config")
}

// format is a client's file format.
type format int

const (
	formatJSON format = iota // JSON; comments and trailing commas kept where present
	formatTOML
)

// Client is one MCP client this package knows.
type Client struct {
	Name  string // the --client name
	Title string // the product's name

	format format
	// servers is the key of the object (JSON) or table (TOML) that
	// holds the servers.
	servers string
	// userPath and projectPath find the files; projectPath nil means
	// the client has no project file.
	userPath    func(Env) string
	projectPath func(Env) string
	// presence is a path whose existence means the client is installed.
	presence func(Env) string
	// remote is the entry for a Streamable HTTP server at url; nil when
	// the client's file cannot hold one (it gets a bridge entry).
	remote func(url string) map[string]any
	// stdio is the entry for a command with args.
	stdio func(command string, args []string) map[string]any
}

// owned are the keys of an entry this package writes; an entry's other
// keys (a user's "disabled", "timeout", "env") are left alone.
var owned = []string{"type", "url", "serverUrl", "httpUrl", "command", "args"}

func plainStdio(command string, args []string) map[string]any {
	return map[string]any{"command": command, "args": args}
}

func typedStdio(command string, args []string) map[string]any {
	return map[string]any{"type": "stdio", "command": command, "args": args}
}

// The clients, from their documentation (see docs/client.md for sources):
// where each keeps its servers and how it names a remote one.
var clients = []Client{
	{
		Name: "claude-code", Title: "Claude Code", servers: "mcpServers",
		// User scope lives at the top level of ~/.claude.json; project
		// scope is .mcp.json in the project root.
		userPath:    func(e Env) string { return filepath.Join(e.Home, ".claude.json") },
		projectPath: func(e Env) string { return filepath.Join(e.ProjectDir, ".mcp.json") },
		presence:    func(e Env) string { return filepath.Join(e.Home, ".claude") },
		remote:      func(u string) map[string]any { return map[string]any{"type": "http", "url": u} },
		stdio:       typedStdio,
	},
	{
		Name: "claude-desktop", Title: "Claude Desktop", servers: "mcpServers",
		// The file holds stdio servers only (remote ones are added as
		// connectors in the app), so the gateway is reached through
		// mcpgate bridge.
		userPath: func(e Env) string {
			return filepath.Join(e.appConfigDir(), "Claude", "claude_desktop_config.json")
		},
		presence: func(e Env) string { return filepath.Join(e.appConfigDir(), "Claude") },
		stdio:    plainStdio,
	},
	{
		Name: "cursor", Title: "Cursor", servers: "mcpServers",
		userPath:    func(e Env) string { return filepath.Join(e.Home, ".cursor", "mcp.json") },
		projectPath: func(e Env) string { return filepath.Join(e.ProjectDir, ".cursor", "mcp.json") },
		presence:    func(e Env) string { return filepath.Join(e.Home, ".cursor") },
		remote:      func(u string) map[string]any { return map[string]any{"url": u} },
		stdio:       plainStdio,
	},
	{
		Name: "vscode", Title: "VS Code", servers: "servers",
		userPath:    func(e Env) string { return filepath.Join(e.appConfigDir(), "Code", "User", "mcp.json") },
		projectPath: func(e Env) string { return filepath.Join(e.ProjectDir, ".vscode", "mcp.json") },
		presence:    func(e Env) string { return filepath.Join(e.appConfigDir(), "Code", "User") },
		remote:      func(u string) map[string]any { return map[string]any{"type": "http", "url": u} },
		stdio:       typedStdio,
	},
	{
		Name: "windsurf", Title: "Windsurf", servers: "mcpServers",
		userPath: func(e Env) string { return filepath.Join(e.Home, ".codeium", "windsurf", "mcp_config.json") },
		presence: func(e Env) string { return filepath.Join(e.Home, ".codeium", "windsurf") },
		remote:   func(u string) map[string]any { return map[string]any{"serverUrl": u} },
		stdio:    plainStdio,
	},
	{
		Name: "codex", Title: "Codex CLI", servers: "mcp_servers", format: formatTOML,
		userPath:    func(e Env) string { return filepath.Join(codexHome(e), "config.toml") },
		projectPath: func(e Env) string { return filepath.Join(e.ProjectDir, ".codex", "config.toml") },
		presence:    codexHome,
		remote:      func(u string) map[string]any { return map[string]any{"url": u} },
		stdio:       plainStdio,
	},
	{
		Name: "gemini", Title: "Gemini CLI", servers: "mcpServers",
		// httpUrl is Streamable HTTP; url would be the old SSE transport.
		userPath:    func(e Env) string { return filepath.Join(e.Home, ".gemini", "settings.json") },
		projectPath: func(e Env) string { return filepath.Join(e.ProjectDir, ".gemini", "settings.json") },
		presence:    func(e Env) string { return filepath.Join(e.Home, ".gemini") },
		remote:      func(u string) map[string]any { return map[string]any{"httpUrl": u} },
		stdio:       plainStdio,
	},
}

func codexHome(e Env) string {
	if d := e.getenv("CODEX_HOME"); d != "" {
		return d
	}
	return filepath.Join(e.Home, ".codex")
}

// Clients lists the known clients by name.
func Clients() []Client {
	out := append([]Client(nil), clients...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a client by its --client name.
func Lookup(name string) (Client, bool) {
	for _, c := range clients {
		if c.Name == name {
			return c, true
		}
	}
	return Client{}, false
}

// Path is the client's file for scope, or "" when the client has no file
// of that scope.
func (c Client) Path(e Env, s Scope) string {
	if s == Project {
		if c.projectPath == nil {
			return ""
		}
		return c.projectPath(e)
	}
	return c.userPath(e)
}

// Present says whether the client seems installed for this user: its
// configuration file or directory exists.
func (c Client) Present(e Env) bool {
	for _, p := range []string{c.userPath(e), c.presence(e)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// Remote says whether the client's file can name a Streamable HTTP server
// (which the client then authorizes itself); the others get a bridge.
func (c Client) Remote() bool { return c.remote != nil }
