package tools_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
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
func startWorker(t *testing.T, id workerproto.Identity, cfg *db.Config) *mcp.ClientSession {
	t.Helper()
	cs, _ := startWorkerCmd(t, id, cfg)
	return cs
}

// startWorkerCmd is startWorker that also returns the worker's command, for
// a test that looks at the process.
func startWorkerCmd(t *testing.T, id workerproto.Identity, cfg *db.Config) (*mcp.ClientSession, *exec.Cmd) {
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
	return cs, cmd
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
	cs := startWorker(t, workerproto.Identity{User: "ada", SessionID: "sess-1", ServerTitle: "test box"}, cfg)

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
		{"no identity", nil, workerproto.EnvReadOnly},
		{"unknown toolset", append(workerproto.Identity{User: "ada", Toolsets: []string{"bogus"}}.Environ(), db.EnvDSN+"="+filepath.Join(t.TempDir(), "x.db")), `unknown toolset "bogus"`},
		{"bad driver", append(workerproto.Identity{User: "ada"}.Environ(), db.EnvDriver+"=oracle", db.EnvDSN+"=x"), db.EnvDriver},
		{"bad scope", append(workerproto.Identity{User: "ada"}.Environ(), db.EnvDSN+"="+filepath.Join(t.TempDir(), "x.db"), "MCPGATE_WORKER_SCOPE=everyone"), "MCPGATE_WORKER_SCOPE"},
		{"user scope without an instance id", append(workerproto.Identity{User: "ada"}.Environ(), db.EnvDSN+"="+filepath.Join(t.TempDir(), "x.db"), "MCPGATE_WORKER_SCOPE=user"), "instance id"},
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

// TestWorkerWire speaks raw JSON-RPC to the worker over stdio, to pin what
// the SDK client would smooth over: serverInfo without a title key, -32602
// for an unknown tool, and a tool error's structured kind.
func TestWorkerWire(t *testing.T) {
	cmd := exec.Command(mcpgateBinary(t), "worker")
	cmd.Env = append(append(os.Environ(), workerproto.Identity{User: "ada"}.Environ()...),
		(&db.Config{DSN: filepath.Join(t.TempDir(), "w.db")}).Environ()...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &testWriter{t: t}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	exchange := func(req string) map[string]any {
		t.Helper()
		_, err := io.WriteString(stdin, req+"\n")
		require.NoError(t, err)
		require.True(t, lines.Scan(), "no answer: %v", lines.Err())
		var msg map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &msg), lines.Text())
		return msg
	}
	init := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	info := init["result"].(map[string]any)["serverInfo"].(map[string]any)
	assert.NotContains(t, info, "title", "an unset title is left out of serverInfo")
	assert.Equal(t, "mcpgate", info["name"])
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)

	for _, bad := range []struct {
		line string
		code float64
	}{
		{"this is not json", -32700},
		{`{"foo": 1}`, -32600},
		{`[]`, -32600},
		{`{"jsonrpc": "1.0", "id": 7, "method": "ping"}`, -32600},
	} {
		reply := exchange(bad.line)
		assert.Equal(t, bad.code, reply["error"].(map[string]any)["code"], bad.line)
	}

	unknown := exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	require.Contains(t, unknown, "error")
	assert.Equal(t, float64(-32602), unknown["error"].(map[string]any)["code"])

	bad := exchange(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query","arguments":{"sql":"SELECT 1","sqll":"x"}}}`)
	res := bad["result"].(map[string]any)
	assert.Equal(t, true, res["isError"])
	assert.Equal(t, "invalidParams", res["structuredContent"].(map[string]any)["error"].(map[string]any)["kind"])

	notObject := exchange(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"query","arguments":[1]}}`)
	r, ok := notObject["result"].(map[string]any)
	require.True(t, ok, "got %v", notObject)
	assert.Equal(t, true, r["isError"])
	assert.Equal(t, "invalidParams", r["structuredContent"].(map[string]any)["error"].(map[string]any)["kind"])
}
