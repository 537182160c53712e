package audit_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/gateway"
)

// BenchmarkCall: one forwarded call's audit event, to the main log (serve's
// default, a text handler) and to audit.path as well.
func BenchmarkCall(b *testing.B) {
	e := &gateway.CallEvent{Time: time.Now(), Method: "tools/call", User: "alice", ClientID: "mcp-client",
		Issuer: "https://issuer.example", Session: "cc4ca843", WorkerKind: "session", WorkerPid: 4242,
		Tool: "status", Decision: "allowed", Duration: 700 * time.Microsecond, Outcome: "ok", RequestID: "12"}
	main := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		opts func(b *testing.B) audit.Options
	}{
		{"main-log", func(*testing.B) audit.Options { return audit.Options{Logger: main} }},
		{"file-and-main-log", func(b *testing.B) audit.Options {
			return audit.Options{Logger: main, Path: filepath.Join(b.TempDir(), "audit.jsonl")}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := audit.Open(tc.opts(b))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				l.Call(e)
			}
		})
	}
}
