package gateway

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/worker/workertest"
)

// stubWorker is the path of the stub stdio MCP server (it speaks 2025-11-25
// only), and sdkWorker that of a go-sdk server (every revision, 2026-07-28
// included); TestMain builds both.
var stubWorker, sdkWorker string

// builtinWorker is the path of the built-in worker (cmd/mcpgate-worker),
// for the tests of pre-started workers; TestMain builds it too.
var builtinWorker string

var update = flag.Bool("update", false, "rewrite the golden transcripts under testdata/")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(workertest.Main(m, map[string]*string{
		workertest.Stub: &stubWorker,
		"github.com/mcpgate/mcpgate/worker/internal/sdkworker": &sdkWorker,
		"github.com/mcpgate/mcpgate/cmd/mcpgate-worker":        &builtinWorker,
	}))
}

// testLogger sends the gateway's logs to the test log when -v, else nowhere.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// launcher returns a launcher of command (the stub worker when nil), with a
// stop grace of 2s unless opts says otherwise.
func launcher(t testing.TB, command []string, opts worker.LauncherOptions) *worker.Launcher {
	t.Helper()
	switch {
	case command == nil:
		command = []string{stubWorker}
	case command[0] == "sdkworker": // in tables built before TestMain ran
		command = []string{sdkWorker}
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 2 * time.Second
	}
	l, err := worker.NewLauncher(command, opts)
	if err != nil {
		t.Fatalf("NewLauncher: %v", err)
	}
	return l
}

// newTestGateway serves a gateway with the stub worker, started with wopts
// (at most one), on an httptest server; both are closed when the test
// ends, and no worker may be left.
func newTestGateway(t testing.TB, opts Options, wopts ...worker.LauncherOptions) (*Gateway, *httptest.Server) {
	t.Helper()
	return newTestGatewayOf(t, nil, opts, wopts...)
}

// newTestGatewayOf is newTestGateway with another worker command.
func newTestGatewayOf(t testing.TB, command []string, opts Options, wopts ...worker.LauncherOptions) (*Gateway, *httptest.Server) {
	t.Helper()
	var wo worker.LauncherOptions
	if len(wopts) > 0 {
		wo = wopts[0]
	}
	return serveTestGateway(t, launcher(t, command, wo), opts, nil, nil)
}

// newTestGatewayOn is newTestGateway with the server's listener passed
// through wrap and the server through configure, each when not nil.
func newTestGatewayOn(t testing.TB, opts Options, wrap func(net.Listener) net.Listener, configure func(*http.Server)) (*Gateway, *httptest.Server) {
	t.Helper()
	return serveTestGateway(t, launcher(t, nil, worker.LauncherOptions{}), opts, wrap, configure)
}

// serveTestGateway is what the three above share.
func serveTestGateway(t testing.TB, l *worker.Launcher, opts Options, wrap func(net.Listener) net.Listener, configure func(*http.Server)) (*Gateway, *httptest.Server) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	g, err := New(l, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewUnstartedServer(g)
	if wrap != nil {
		srv.Listener = wrap(srv.Listener)
	}
	if configure != nil {
		configure(srv.Config)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g, srv
}
