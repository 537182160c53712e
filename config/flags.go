package config

import "github.com/spf13/pflag"

// flagKeys maps each flag Flags defines, but --config, to its key.
var flagKeys = map[string]string{
	"listen":         "server.listen",
	"read-only":      "server.read_only",
	"insecure":       "server.insecure",
	"title":          "server.title",
	"public-url":     "server.public_url",
	"tls-cert":       "tls.cert_file",
	"tls-key":        "tls.key_file",
	"worker-command": "worker.command",
	"log-level":      "log.level",
	"log-format":     "log.format",
}

// flagKey returns the key a flag sets, for flags Load knows.
func flagKey(flag string) (key, bool) {
	name, ok := flagKeys[flag]
	if !ok {
		return key{}, false
	}
	return lookupKey(name)
}

// Flags returns the flags of `mcpgate serve`. Load applies only the flags
// that were set on the command line, so a flag's shown default never
// overrides the file or the environment. The caller may add flags of its
// own to the set; Load ignores names it does not know.
func Flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.String("config", "", "YAML configuration file (or "+EnvConfigFile+"); see deploy/ and docs/configuration.md")
	fs.String("listen", DefaultListen, "host:port to listen on (non-loopback needs TLS and auth, or --insecure), unix:PATH for a Unix socket (unix: alone: the per-user one), or one of each separated by a comma")
	fs.Bool("read-only", false, "make every session read-only")
	fs.Bool("insecure", false, "allow a non-loopback --listen without TLS and auth (never in production)")
	fs.String("title", "", "server title shown to users (serverInfo.title, RFC 9728 resource_name)")
	fs.String("public-url", "", "public origin of the gateway, e.g. https://mcp.example.com; the resource is this + /mcp")
	fs.String("tls-cert", "", "TLS certificate file (PEM); needs --tls-key")
	fs.String("tls-key", "", "TLS private key file (PEM); needs --tls-cert")
	fs.String("worker-command", "", "stdio MCP server command run per session (and per user on MCP 2026-07-28), split like shell words (default: the built-in worker)")
	fs.String("log-level", DefaultLogLevel, "log level: debug, info, warn or error")
	fs.String("log-format", DefaultLogFormat, "log format: text or json")
	return fs
}
