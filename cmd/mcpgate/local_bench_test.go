//go:build linux

package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/local"
)

// BenchmarkLocalCall: one tools/call (status, on the built-in worker,
// MCP 2026-07-28) through the stdio shim and the daemon's Unix socket,
// against the same call to the same gateway over TCP, the client
// speaking Streamable HTTP itself. Each reports its median (p50-µs); the
// local mode's budget is 1.1× the TCP one.
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

	run := func(b *testing.B, t mcp.Transport) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		call := func() time.Duration {
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			return time.Since(start)
		}
		for range 20 { // the worker started, connections open
			call()
		}
		var times []time.Duration
		b.ResetTimer()
		for b.Loop() {
			times = append(times, call())
		}
		b.StopTimer()
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	}
	b.Run("tcp", func(b *testing.B) {
		run(b, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"})
	})
	b.Run("shim", func(b *testing.B) {
		cmd := exec.Command(os.Args[0], "bridge", "--socket="+sock, "--no-start")
		run(b, &mcp.CommandTransport{Command: cmd})
	})
}
