package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// releaseBinaries builds mcpgate and mcpgate-worker as make build does
// (no race detector, CGO_ENABLED=0), once.
var releaseBinaries = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpgate-bench-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/mcpgate/mcpgate/cmd/mcpgate", "github.com/mcpgate/mcpgate/cmd/mcpgate-worker")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err, string(out)}
	}
	return dir, nil
})

// BenchmarkWorkerColdStart measures a worker process started cold, as the
// gateway starts one without a pool, with and without the sandbox: from
// the start to the answer to initialize (init-ms, median) and then one
// tool call (call-µs, median of 10 per process). The built-in worker
// (mcpgate-worker, SQLite, tool status) confines itself; an external one
// (the hostile test worker, tool read of /dev/null) is started directly or
// through mcpgate exec-limited, which confines it and execs it (and, for
// comparison, the helper with an rlimit and no sandbox).
func BenchmarkWorkerColdStart(b *testing.B) {
	bin, err := releaseBinaries()
	if err != nil {
		b.Fatal(err)
	}
	hostile, err := hostileWorker()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	id := workerproto.Identity{User: "alice", SessionID: "s1", Tools: nil, Scope: workerproto.ScopeSession}
	base := append([]string{"PATH=" + os.Getenv("PATH"), "GOMAXPROCS=1"}, id.Environ()...)
	builtinEnv := append(base, (&db.Config{Driver: db.SQLite, DSN: filepath.Join(dir, "data", "bench.db")}).Environ()...)
	builtinSpec := sandbox.Spec{Profile: sandbox.ProfileBuiltin}
	externalSpec := sandbox.External(sandbox.Spec{}, hostile, "")
	helper := []string{filepath.Join(bin, "mcpgate"), limitHelperCommand, sandbox.ArgPrefix + externalSpec.Encode(), "--", hostile}
	status := `{"name":"status","arguments":{}}`
	read := `{"name":"read","arguments":{"path":"/dev/null"}}`
	for _, c := range []struct {
		name string
		argv []string
		env  []string
		call string
	}{
		{"builtin/unconfined", []string{filepath.Join(bin, "mcpgate-worker")}, builtinEnv, status},
		{"builtin/sandbox", []string{filepath.Join(bin, "mcpgate-worker")}, append(slices.Clone(builtinEnv), sandbox.EnvSpec+"="+builtinSpec.Encode()), status},
		{"external/unconfined", []string{hostile}, base, read},
		{"external/exec-limited", append(helper, hostile), base, read},
		// The helper's exec alone, without a sandbox: what an rlimit costs.
		{"external/exec-limited-rlimit-only", []string{filepath.Join(bin, "mcpgate"), limitHelperCommand, "nofile=4096", "--", hostile, hostile}, base, read},
	} {
		b.Run(c.name, func(b *testing.B) { benchColdStart(b, c.argv, c.env, c.call) })
	}
}

func benchColdStart(b *testing.B, argv, env []string, call string) {
	var initLat, callLat []time.Duration
	for b.Loop() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		out := bufio.NewReader(outPipe)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		if _, err := out.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		initLat = append(initLat, time.Since(start))
		for i := range 10 {
			t := time.Now()
			io.WriteString(in, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+2)+`,"method":"tools/call","params":`+call+"}\n")
			line, err := out.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			callLat = append(callLat, time.Since(t))
			if bytes.Contains(line, []byte(`"isError":true`)) || bytes.Contains(line, []byte(`errno`)) {
				b.Fatalf("call: %s", line)
			}
		}
		in.Close()
		cmd.Wait()
	}
	slices.Sort(initLat)
	slices.Sort(callLat)
	b.ReportMetric(float64(initLat[len(initLat)/2].Microseconds())/1000, "init-ms")
	b.ReportMetric(float64(callLat[len(callLat)/2].Microseconds()), "call-µs")
}
