package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools"
)

// lineWaiter is an io.Writer that reports the first match of a pattern.
type lineWaiter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	re    *regexp.Regexp
	found chan string
	once  sync.Once
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := w.re.FindStringSubmatch(w.buf.String()); m != nil {
		w.once.Do(func() { w.found <- m[1] })
	}
	return len(p), nil
}

// buildMcpgate builds this program, for the gateway to run as its worker
// (a test binary cannot be `mcpgate worker`).
func buildMcpgate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpgate")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// startServe runs `mcpgate serve` in-process and returns its /mcp URL; the
// server stops when the test ends, and Run must then return nil.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &lineWaiter{re: regexp.MustCompile(`url=(http://\S+/mcp)`), found: make(chan string, 1)}
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: logs, Getenv: os.Getenv}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, append([]string{"serve"}, args...)) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		assert.NoError(t, m.Close())
	})
	select {
	case url := <-logs.found:
		return url
	case err := <-done:
		t.Fatalf("serve ended early: %v\n%s", err, logs.buf.String())
	}
	return ""
}

func TestServeWithTheBuiltInWorker(t *testing.T) {
	bin := buildMcpgate(t)
	saved := builtInWorker
	builtInWorker = func() ([]string, error) { return []string{bin, "worker"}, nil }
	t.Cleanup(func() { builtInWorker = saved })
	t.Chdir(t.TempDir()) // the built-in worker keeps its SQLite file under ./data

	for _, tc := range []struct {
		name     string
		readOnly bool
	}{{"read-write", false}, {"read-only", true}} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--listen", "127.0.0.1:0", "--title", "Test Gate"}
			if tc.readOnly {
				args = append(args, "--read-only")
			}
			url := startServe(t, args...)
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			require.NoError(t, err)
			defer cs.Close()
			assert.Equal(t, "Test Gate", cs.InitializeResult().ServerInfo.Title)

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status"})
			require.NoError(t, err)
			require.False(t, res.IsError)
			sc := res.StructuredContent.(map[string]any)
			assert.Equal(t, cs.ID(), sc["sessionId"])
			assert.Equal(t, tc.readOnly, sc["readOnly"])

			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			safe, err := tools.SafeToolNames(nil)
			require.NoError(t, err)
			gated := 0
			for _, n := range names {
				if !slices.Contains(safe, n) {
					gated++
				}
			}
			// The gateway shows only what the toolsets vouch for (the
			// engine may not register every one of them, e.g. no routines
			// on SQLite); a read-write session sees gated tools too.
			assert.Contains(t, names, "status")
			if tc.readOnly {
				assert.Zero(t, gated, "gated tools listed: %v", names)
			} else {
				assert.NotZero(t, gated)
			}
		})
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: os.Getenv}
	err := m.Run(context.Background(), []string{"serve", "--listen", "0.0.0.0:8000"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a loopback address")
}

func TestServeAnswersOnMcpOnly(t *testing.T) {
	url := startServe(t, "--listen", "127.0.0.1:0", "--worker-command", "/bin/false")
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/other")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
