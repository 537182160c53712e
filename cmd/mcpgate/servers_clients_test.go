package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tsSDKVersion is the TypeScript MCP SDK of the 2025-11-25 generation
// (@modelcontextprotocol/sdk) that .ci/run installs under .bin/npm-sdk
// (git-ignored); the tests never fetch it. MCPGATE_TS_SDK names another
// install prefix.
const tsSDKVersion = "1.32.2"

// tsSDKPrefix returns the install prefix of the 1.x TypeScript SDK, as
// tsClientPrefix does the 2.x client's.
func tsSDKPrefix(t *testing.T) string {
	t.Helper()
	return npmPrefix(t, "MCPGATE_TS_SDK", "npm-sdk", "@modelcontextprotocol/sdk", tsSDKVersion)
}

// npmPrefix returns the install prefix of the npm package pkg at version:
// the directory the environment variable env names, else .bin/dir; or
// skips the test when node or the package is missing there (fails instead
// under MCPGATE_REQUIRE_NODE=1, as .ci/run sets it).
func npmPrefix(t *testing.T, env, dir, pkg, version string) string {
	t.Helper()
	prefix := os.Getenv(env)
	if prefix == "" {
		var err error
		prefix, err = filepath.Abs(filepath.Join("..", "..", ".bin", dir))
		require.NoError(t, err)
	}
	manifest, _ := os.ReadFile(filepath.Join(prefix, "node_modules", filepath.FromSlash(pkg), "package.json"))
	_, noNode := exec.LookPath("node")
	if noNode != nil || !strings.Contains(string(manifest), `"version": "`+version+`"`) {
		why := "node or " + pkg + "@" + version + " under " + prefix + " is missing (.ci/run installs them)"
		if os.Getenv("MCPGATE_REQUIRE_NODE") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return prefix
}

// goEverythingHTTP starts the go-sdk's conformance everything-server
// (.bin/everything-server, which scripts/conformance.sh --install puts
// there) as a Streamable HTTP server on a free loopback port and returns
// its URL; it skips the test when the binary is missing (fails instead
// under MCPGATE_REQUIRE_NODE=1, as .ci/run installs it).
func goEverythingHTTP(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", ".bin", "everything-server"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		why := bin + " is missing (scripts/conformance.sh --install puts it there)"
		if os.Getenv("MCPGATE_REQUIRE_NODE") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	// The server takes an address, not a listener: a port free now may be
	// taken before it listens, so a start that exits is retried.
	for attempt := 0; attempt < 3; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, "-http", addr)
		var log bytes.Buffer
		cmd.Stderr = &syncWriter{w: &log}
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		// Its listen happens inside the process: dialling is the only
		// outside view of it, bounded so a broken start cannot hang.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			select {
			case <-exited:
				t.Logf("everything-server on %s exited: %s", addr, log.String())
				deadline = time.Time{}
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				return "http://" + addr + "/mcp"
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatal("the go-sdk everything-server did not listen")
	return ""
}

// threeServersGateway starts the real program with three servers, each
// needing its own scope: db, the built-in worker on SQLite; ev, the npm
// everything server over stdio; rm, the go-sdk everything-server as a
// remote Streamable HTTP server (url). It returns the gateway as the
// combined /mcp's client sees it.
func threeServersGateway(t *testing.T) *tlsGateway {
	t.Helper()
	prefix, script := everythingServer(t)
	remoteURL := goEverythingHTTP(t)
	file := filepath.Join(t.TempDir(), "servers.yaml")
	yaml := `
servers:
  - name: db
    required_scopes: [db:use]
    write_scope: db:write
  - name: ev
    command: [node, ` + script + `, stdio]
    dir: ` + prefix + `
    required_scopes: [ev:use]
    safe_tools: [echo, get-sum]
  - name: rm
    url: ` + remoteURL + `
    required_scopes: [rm:use]
    safe_tools: [test_simple_text]
`
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
	g := launchTLSGateway(t, map[string]string{"MCPGATE_CONFIG": file, "MCPGATE_AUTH_REQUIRED_SCOPES": "", "MCPGATE_AUTH_WRITE_SCOPE": ""}, tlsLaunch{})
	db := *g
	db.resource = g.resource + "/db"
	db.awaitServing(t)
	return g
}

// tsResult is what testdata/ts-calls.mjs prints.
type tsResult struct {
	Version, SessionID string
	Tools              []string
	Results            []struct {
		Text    string
		IsError bool
	}
}

// tsPrefixes are the install prefixes of both TypeScript SDK generations.
type tsPrefixes struct{ sdk, client string }

// calls runs testdata/ts-calls.mjs: the TypeScript client of kind ("sdk",
// 1.x; "client", 2.x) at g's resource with token, calling calls.
func (ts tsPrefixes) calls(t *testing.T, g *tlsGateway, kind, token string, calls []map[string]any) tsResult {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "gateway.pem")
	require.NoError(t, os.WriteFile(ca, g.certPEM, 0o644))
	arg, err := json.Marshal(calls)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join("testdata", "ts-calls.mjs"), kind, g.resource, string(arg))
	cmd.Env = append(os.Environ(), "MCPGATE_TS_SDK="+ts.sdk, "MCPGATE_TS_CLIENT="+ts.client,
		"MCPGATE_TOKEN="+token, "NODE_EXTRA_CA_CERTS="+ca)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s at %s: %s\n%s", kind, g.resource, out, stderr.String())
	var res tsResult
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Len(t, res.Results, len(calls))
	return res
}

// TestThreeServersTypeScriptClients: a gateway with a built-in, a stdio
// and a remote server, each reached at its own path by both generations
// of the TypeScript SDK (1.x negotiating 2025-11-25 with a session, 2.x
// 2026-07-28 without) and the go-sdk client on both, and all three
// through the combined /mcp under prefixed names; a token for the
// combined endpoint holding one server's scope alone sees that server
// alone.
func TestThreeServersTypeScriptClients(t *testing.T) {
	ts := tsPrefixes{sdk: tsSDKPrefix(t), client: tsClientPrefix(t)}
	top := threeServersGateway(t)
	at := func(name string) *tlsGateway {
		g := *top
		g.resource = top.resource + "/" + name
		return &g
	}
	const simple = "This is a simple text response for testing."
	servers := []struct {
		name, scope, tool string
		args              map[string]any
		want              string
	}{
		{"db", "db:use", "status", map[string]any{}, "alice"},
		{"ev", "ev:use", "echo", map[string]any{"message": "hello"}, "Echo: hello"},
		{"rm", "rm:use", "test_simple_text", map[string]any{}, simple},
	}
	generations := []struct{ kind, version string }{{"sdk", "2025-11-25"}, {"client", "2026-07-28"}}

	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			g := at(s.name)
			tok := g.token(t, "alice", s.scope)
			for _, gen := range generations {
				res := ts.calls(t, g, gen.kind, tok, []map[string]any{{"name": s.tool, "arguments": s.args}})
				assert.Equal(t, gen.version, res.Version, "%s", gen.kind)
				assert.Equal(t, gen.version == "2025-11-25", res.SessionID != "", "a session on 2025-11-25 alone")
				assert.Contains(t, res.Tools, s.tool, "%s", gen.kind)
				for _, name := range res.Tools {
					assert.NotContains(t, name, "__", "no prefixed names at /mcp/%s", s.name)
				}
				assert.False(t, res.Results[0].IsError, "%s: %s", gen.kind, res.Results[0].Text)
				assert.Contains(t, res.Results[0].Text, s.want, "%s", gen.kind)
			}
			for _, version := range []string{"", "2025-11-25"} {
				cs := g.connectVersion(t, &tok, version)
				assert.Contains(t, callText(t, cs, s.tool, s.args), s.want, "go-sdk on %q", version)
			}
		})
	}

	t.Run("combined", func(t *testing.T) {
		tok := top.token(t, "alice", "db:use", "ev:use", "rm:use")
		var calls []map[string]any
		for _, s := range servers {
			calls = append(calls, map[string]any{"name": s.name + "__" + s.tool, "arguments": s.args})
		}
		for _, gen := range generations {
			res := ts.calls(t, top, gen.kind, tok, calls)
			assert.Equal(t, gen.version, res.Version, "%s", gen.kind)
			for i, s := range servers {
				assert.Contains(t, res.Tools, s.name+"__"+s.tool, "%s", gen.kind)
				assert.NotContains(t, res.Tools, s.tool, "%s: no unprefixed names", gen.kind)
				assert.False(t, res.Results[i].IsError, "%s %s: %s", gen.kind, s.name, res.Results[i].Text)
				assert.Contains(t, res.Results[i].Text, s.want, "%s %s", gen.kind, s.name)
			}
		}
		for _, version := range []string{"", "2025-11-25"} {
			cs := top.connectVersion(t, &tok, version)
			for _, s := range servers {
				assert.Contains(t, callText(t, cs, s.name+"__"+s.tool, s.args), s.want, "go-sdk on %q", version)
			}
		}

		// ev's scope alone: ev alone, on both generations.
		evOnly := top.token(t, "bob", "ev:use")
		for _, gen := range generations {
			res := ts.calls(t, top, gen.kind, evOnly, []map[string]any{{"name": "rm__test_simple_text"}})
			assert.Contains(t, res.Tools, "ev__echo", "%s", gen.kind)
			for _, name := range res.Tools {
				assert.True(t, strings.HasPrefix(name, "ev__"), "%s: %s listed without its scope", gen.kind, name)
			}
			assert.True(t, res.Results[0].IsError, "%s: rm's tool without rm:use: %s", gen.kind, res.Results[0].Text)
			assert.NotContains(t, res.Results[0].Text, simple)
		}
	})
}
