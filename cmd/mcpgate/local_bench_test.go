//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/local"
)

// BenchmarkLocalCall: one tools/call (status, on the built-in worker,
// MCP 2026-07-28) through the stdio shim and the daemon's Unix socket,
// against the same call to the same gateway over TCP, the client
// speaking Streamable HTTP itself; an operation is one of each. It
// reports both medians and their ratio; the local mode's budget is 1.1.
func BenchmarkLocalCall(b *testing.B) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "run", local.SocketName)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{
		"MCPGATE_SERVER_LISTEN":               addr + ",unix:" + sock,
		"MCPGATE_DATABASE_PATH":               filepath.Join(dir, "db"),
		"MCPGATE_METRICS_LISTEN":              "off",
		"MCPGATE_LIMITS_WORKER_START_TIMEOUT": "60s",
		"MCPGATE_LIMITS_DRAIN_MIN":            "1ms",
	}
	log := &logWatch{}
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: log, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve"}) }()
	defer func() { cancel(); <-done }()
	// The socket is served last, after the TCP address.
	select {
	case <-log.seen(`msg="mcpgate: serving" socket=`):
	case err := <-done:
		b.Fatalf("serve ended: %v\n%s", err, log.String())
	}

	connect := func(t mcp.Transport) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	tcp := connect(&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"})
	defer tcp.Close()
	shimCmd := exec.Command(os.Args[0], "bridge", "--socket="+sock, "--no-start")
	shim := connect(&mcp.CommandTransport{Command: shimCmd})
	defer shim.Close()
	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		return time.Since(start)
	}
	// MCPGATE_BENCH_OTHER_SHIM names another build's mcpgate (an older
	// one, whose shim is an HTTP client of the socket) to measure in the
	// same run, against the same daemon.
	clients := []*mcp.ClientSession{tcp, shim}
	pids := []int{0, shimCmd.Process.Pid}
	if other := os.Getenv("MCPGATE_BENCH_OTHER_SHIM"); other != "" {
		cmd := exec.Command(other, "bridge", "--socket="+sock, "--no-start")
		cs := connect(&mcp.CommandTransport{Command: cmd})
		defer cs.Close()
		clients, pids = append(clients, cs), append(pids, cmd.Process.Pid)
	}
	for range 20 { // the workers started, connections open
		for _, cs := range clients {
			call(cs)
		}
	}
	// The second client's first call starts no process: it reaches the
	// per-user worker the first started.
	started := len(workerStarted.FindAllString(log.String(), -1))
	second := connect(&mcp.CommandTransport{Command: exec.Command(os.Args[0], "bridge", "--socket="+sock, "--no-start")})
	call(second)
	second.Close()
	if n := len(workerStarted.FindAllString(log.String(), -1)); n != started {
		b.Fatalf("the second client's first call started %d worker(s)", n-started)
	}
	// They take turns, each starting a round in its turn, so that a
	// change in the machine's load falls on all alike.
	took := make([][]time.Duration, len(clients))
	cpu0 := make([]time.Duration, len(clients))
	for k, pid := range pids {
		cpu0[k] = cpuTime(pid)
	}
	i := 0
	for b.Loop() {
		for k := range clients {
			j := (i + k) % len(clients)
			took[j] = append(took[j], call(clients[j]))
		}
		i++
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	t := p50(took[0])
	b.ReportMetric(t, "tcp-p50-µs")
	for k, name := range []string{"shim", "other"}[:len(clients)-1] {
		// The shim's own work, which a loaded machine's scheduling does
		// not blur: what it adds to a call on an idle one.
		b.ReportMetric(float64((cpuTime(pids[k+1])-cpu0[k+1]).Microseconds())/float64(len(took[k+1])), name+"-cpu-µs/call")
		sh := p50(took[k+1])
		b.ReportMetric(sh, name+"-p50-µs")
		b.ReportMetric(sh/t, name+"/tcp")
	}
}

// cpuTime is the user and system CPU time process pid has used
// (/proc/PID/stat, in clock ticks of 10ms).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
