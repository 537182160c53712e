package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/builtin"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// TestWorkerBinaryLinksNoGateway: the worker-only binary exists to be
// lighter than `mcpgate worker`; it must not link the gateway, its auth, its
// configuration loader or their modules (each package linked costs every
// session's process its init and the pages it touches).
func TestWorkerBinaryLinksNoGateway(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/mcpgate/mcpgate/tools/builtin", "the worker program itself")
	forbidden := []string{
		"github.com/mcpgate/mcpgate/gateway",
		"github.com/mcpgate/mcpgate/auth",
		"github.com/mcpgate/mcpgate/config",
		"github.com/mcpgate/mcpgate/doctor",
		"github.com/mcpgate/mcpgate/install",
		"github.com/mcpgate/mcpgate/oauthclient",
		"github.com/mcpgate/mcpgate/bridge",
		"github.com/spf13/viper",
		"github.com/lestrrat-go/",
		"github.com/coreos/go-oidc",
		"go.yaml.in/yaml",
		"github.com/pelletier/go-toml",
	}
	for _, d := range deps {
		for _, f := range forbidden {
			assert.False(t, d == f || strings.HasPrefix(d, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(d, f)),
				"mcpgate-worker links %s (through %s): keep the gateway's dependencies out of the worker", f, d)
		}
	}
}

// asMain makes this test binary the worker itself, for TestWorkerOverPipe.
const asMain = "MCPGATE_WORKER_BINARY_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestWorkerOverPipe runs the program as the gateway does, stdin and stdout
// pipes (stdin read through the poller: builtin.PollableStdin), with the
// gateway's GOMAXPROCS=1: it initializes, answers a call, and ends cleanly
// when stdin closes.
func TestWorkerOverPipe(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	id := workerproto.Identity{User: "alice", SessionID: "s1"}
	cfg := db.Config{Driver: db.SQLite, DSN: filepath.Join(t.TempDir(), "demo.db")}
	cmd.Env = slices.Concat([]string{asMain + "=1", "PATH=" + os.Getenv("PATH")}, cfg.Environ(), builtin.Environ(), id.Environ())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "%s", &stderr)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err, "%s", &stderr)
	assert.False(t, res.IsError, "status: %+v", res.Content)
	require.NoError(t, cs.Close())
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "%s", &stderr)
}
