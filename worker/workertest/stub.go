// Package workertest helps other packages' tests run real worker
// processes: it builds the test workers (worker/internal/...) once per test
// binary.
package workertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Stub is the package of the stub stdio MCP server (2025-11-25 only).
const Stub = "github.com/mcpgate/mcpgate/worker/internal/stubworker"

// Main is a TestMain body: it builds each package of workers (package path
// → where to store the binary's path) into a temporary directory, runs the
// tests and removes the directory. It returns the exit code for os.Exit.
func Main(m *testing.M, workers map[string]*string) int {
	dir, err := os.MkdirTemp("", "mcpgate-workers-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	args := []string{"build", "-o", dir + "/"}
	for pkg, path := range workers {
		*path = filepath.Join(dir, filepath.Base(pkg))
		args = append(args, pkg)
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test workers:", err)
		return 1
	}
	return m.Run()
}
