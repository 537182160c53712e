package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
