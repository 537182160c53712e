package builtin

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/workerproto"
)

// firstRead closes ready on its reader's first Read: a pre-started worker
// reads stdin once its identity-independent work is done.
type firstRead struct {
	io.Reader
	once  sync.Once
	ready chan struct{}
}

func (r *firstRead) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.ready) })
	return r.Reader.Read(p)
}

// BenchmarkPooledStart measures what a session waits for in a pre-started
// built-in worker (Run in process, over pipes, SQLite): from its identity
// line to the initialize answer (init-ms) and to a first tools/call
// (status) answer (call-ms), medians. The worker's pre-start work is
// outside the timing; a new worker per iteration.
func BenchmarkPooledStart(b *testing.B) {
	env := prestartedEnv(b)
	id := workerproto.Identity{User: "alice", SessionID: "s1", ServerName: "gw", ServerVersion: "9", Scope: workerproto.ScopeSession}
	msgs := append(id.Line(), '\n')
	msgs = append(msgs, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`+"\n"...)
	initLat := make([]time.Duration, 0, b.N)
	callLat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		in := &firstRead{Reader: inR, ready: make(chan struct{})}
		done := make(chan error, 1)
		go func() {
			done <- Run(b.Context(), Program{Stdin: in, Stdout: outW, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }, Version: "test"})
			outW.Close()
		}()
		<-in.ready
		out := bufio.NewReader(outR)
		b.StartTimer()
		start := time.Now()
		go inW.Write(msgs)
		if _, err := out.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		initLat = append(initLat, time.Since(start))
		line, err := out.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		callLat = append(callLat, time.Since(start))
		b.StopTimer()
		if !bytes.Contains(line, []byte(`"user":"alice"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
			b.Fatalf("status: %s", line)
		}
		inW.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(initLat)
	slices.Sort(callLat)
	b.ReportMetric(float64(initLat[len(initLat)/2].Microseconds())/1000, "init-ms")
	b.ReportMetric(float64(callLat[len(callLat)/2].Microseconds())/1000, "call-ms")
}
