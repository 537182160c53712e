package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// BenchmarkPooledWorkerStart measures what a session waits for in a
// pre-started built-in worker process (mcpgate-worker, SQLite), with and
// without the sandbox, alternating the two in one run: from the identity
// line to the initialize answer (init-ms) and to a first status answer
// (call-ms), medians. The worker's pre-start work is outside the timing:
// the timer starts once it waits on stdin.
func BenchmarkPooledWorkerStart(b *testing.B) {
	bin, err := releaseBinaries()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	env := append([]string{"PATH=" + os.Getenv("PATH"), workerproto.EnvPrestarted + "=true"},
		(&db.Config{Driver: db.SQLite, DSN: filepath.Join(dir, "data", "bench.db")}).Environ()...)
	confined := append(slices.Clone(env), sandbox.EnvSpec+"="+(sandbox.Spec{Profile: sandbox.ProfileBuiltin}).Encode())
	id := workerproto.Identity{User: "alice", SessionID: "s1", ServerName: "gw", ServerVersion: "9", Scope: workerproto.ScopeSession}
	msgs := append(id.Line(), '\n')
	msgs = append(msgs, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`+"\n"...)
	var initLat, callLat [2][]time.Duration
	i := 0
	for b.Loop() {
		k := i % 2
		i++
		e := env
		if k == 1 {
			e = confined
		}
		b.StopTimer()
		cmd := exec.Command(filepath.Join(bin, "mcpgate-worker"))
		cmd.Env = e
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		waitReadingStdin(b, cmd.Process.Pid)
		out := bufio.NewReader(outPipe)
		b.StartTimer()
		start := time.Now()
		if _, err := in.Write(msgs); err != nil {
			b.Fatal(err)
		}
		if _, err := out.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		initLat[k] = append(initLat[k], time.Since(start))
		line, err := out.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		callLat[k] = append(callLat[k], time.Since(start))
		b.StopTimer()
		if !bytes.Contains(line, []byte(`"user":"alice"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
			b.Fatalf("status: %s", line)
		}
		in.Close()
		cmd.Wait()
		b.StartTimer()
	}
	for k, name := range []string{"unconfined", "sandbox"} {
		if len(initLat[k]) == 0 {
			continue
		}
		slices.Sort(initLat[k])
		slices.Sort(callLat[k])
		b.ReportMetric(float64(initLat[k][len(initLat[k])/2].Microseconds())/1000, name+"-init-ms")
		b.ReportMetric(float64(callLat[k][len(callLat[k])/2].Microseconds())/1000, name+"-call-ms")
	}
}

// waitReadingStdin waits until process pid has been idle for 100 ms
// (every thread asleep, no CPU time spent): a pre-started worker waiting
// for its identity.
func waitReadingStdin(b *testing.B, pid int) {
	deadline := time.Now().Add(30 * time.Second)
	last, since := "", time.Now()
	for time.Now().Before(deadline) {
		st := idleState(pid)
		if st == "" || st != last {
			last, since = st, time.Now()
		} else if time.Since(since) > 100*time.Millisecond {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.Fatal("the worker never waited on stdin")
}

// idleState is the process's CPU time when every thread sleeps, else "".
func idleState(pid int) string {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	for _, t := range tasks {
		s, err := os.ReadFile(t)
		if err != nil {
			return ""
		}
		f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+1:]))
		if f[0] != "S" {
			return ""
		}
	}
	s, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+1:]))
	return f[11] + " " + f[12]
}
