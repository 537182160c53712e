// Package workertest helps other packages' tests run real worker
// processes: it builds the stub stdio MCP server
// (worker/internal/stubworker) once per test binary.
package workertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main is a TestMain body: it builds the stub worker into a temporary
// directory, sets *stub to its path, runs the tests and removes the
// directory. It returns the exit code for os.Exit.
func Main(m *testing.M, stub *string) int {
	dir, err := os.MkdirTemp("", "mcpgate-stub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*stub = filepath.Join(dir, "stubworker")
	build := exec.Command("go", "build", "-o", *stub, "github.com/mcpgate/mcpgate/worker/internal/stubworker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the stub worker:", err)
		return 1
	}
	return m.Run()
}
