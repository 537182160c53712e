package tools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mcpgateBinary builds cmd/mcpgate once per test run.
func mcpgateBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpgate-tools-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcpgate")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/mcpgate/mcpgate/cmd/mcpgate").CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// startWorker runs `mcpgate worker` with the identity and database settings
// and returns a go-sdk client connected to it over stdio.
func startWorker(t *testing.T, id worker.Identity, cfg *db.Config) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(mcpgateBinary(t), "worker")
	cmd.Env = append(os.Environ(), id.Environ()...)
	if cfg != nil {
		cmd.Env = append(cmd.Env, cfg.Environ()...)
	}
	cmd.Stderr = &testWriter{t: t}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// testWriter logs a worker's stderr into the test's output.
type testWriter struct {
	t  *testing.T
	mu sync.Mutex
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("worker stderr: %s", p)
	return len(p), nil
}

func TestWorkerProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := &db.Config{Driver: db.SQLite, DSN: filepath.Join(dir, "data", "demo.db")}
	cs := startWorker(t, worker.Identity{User: "ada", SessionID: "sess-1", ServerTitle: "test box"}, cfg)

	info := cs.InitializeResult().ServerInfo
	assert.Equal(t, "mcpgate", info.Name)
	assert.Equal(t, "test box", info.Title)
	assert.NotEmpty(t, info.Version)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"})
	require.NoError(t, err)
	require.False(t, res.IsError, "status failed: %v", res.Content)
	sc := res.StructuredContent.(map[string]any)
	assert.Equal(t, "ada", sc["user"])
	assert.Equal(t, "sess-1", sc["sessionId"])
	assert.Equal(t, false, sc["readOnly"])
	assert.Equal(t, "sqlite", sc["engine"])
	assert.Equal(t, false, sc["uncommittedChanges"])
	assert.FileExists(t, cfg.DSN, "the worker creates the demo database")
}

func TestWorkerRefusesBadSettings(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"no identity", nil, worker.EnvReadOnly},
		{"unknown toolset", append(worker.Identity{User: "ada", Toolsets: []string{"bogus"}}.Environ(), db.EnvDSN+"="+filepath.Join(t.TempDir(), "x.db")), `unknown toolset "bogus"`},
		{"bad driver", append(worker.Identity{User: "ada"}.Environ(), db.EnvDriver+"=oracle", db.EnvDSN+"=x"), db.EnvDriver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(mcpgateBinary(t), "worker")
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tt.env...)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "got success, want the worker to refuse")
			assert.Contains(t, string(out), tt.want)
		})
	}
}
