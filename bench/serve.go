package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// The stand-in servers below serve the benchmark's trivial tool, so that the
// sdk system and the floor serve exactly the same tool through the same
// go-sdk server code.

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

type echoResult struct {
	Text string `json:"text"`
}

// newToolServer returns an mcp.Server with the benchmark tools registered.
func newToolServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "bench"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Returns its text: the cheapest possible tool, so a call measures only the transport.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, echoResult, error) {
		return nil, echoResult(in), nil
	})
	return s
}

// runStdioServer serves the tools over stdin/stdout until stdin closes: the
// stand-in for a worker process.
func runStdioServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stdio-server", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	err := newToolServer("mcpbench-stdio").Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// runSDKServer serves tools with the go-sdk's own StreamableHTTPHandler,
// default options: what a team gets by writing its own server with the SDK.
// With -db it serves mcpgate's built-in toolsets exactly as `mcpgate worker`
// does, one tools server and one database session per MCP session, but all
// in this one process; without it, the echo tool.
//
// With -stateless the handler runs in the go-sdk's stateless mode
// (StreamableHTTPOptions.Stateless), the only one in which it answers MCP
// 2026-07-28 requests: no sessions, one tools server for every request. With
// -db that server is the built-in toolsets as a per-user worker serves them
// (`mcpgate worker` with MCPGATE_WORKER_SCOPE=user: a transaction of its own
// per call unless the call names a handle), the one user being -user.
func runSDKServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sdk-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	dsn := fs.String("db", "", "SQLite database for the built-in toolsets (empty: serve the echo tool)")
	user := fs.String("user", "bench", "the user every session runs as")
	stateless := fs.Bool("stateless", false, "the go-sdk's stateless mode: no sessions, MCP 2026-07-28 served, one tools server for all requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var getServer func(*http.Request) *mcp.Server
	switch {
	case *dsn == "":
		srv := newToolServer("mcpbench-sdk")
		getServer = func(*http.Request) *mcp.Server { return srv }
	case *stateless:
		if _, err := sqlite.Ensure(ctx, *dsn); err != nil {
			return err
		}
		srv, closeDB, err := newPerUserServer(ctx, *dsn, *user, log)
		if err != nil {
			return err
		}
		defer closeDB()
		getServer = func(*http.Request) *mcp.Server { return srv }
	default:
		if _, err := sqlite.Ensure(ctx, *dsn); err != nil {
			return err
		}
		getServer = perSessionServers(func() (*mcp.Server, error) {
			return newBuiltinServer(ctx, *dsn, *user, log)
		}, log)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: *stateless}))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("mcpbench: sdk server: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "mcpbench: sdk server on http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	return nil
}

// perSessionServers is a handler's getServer that makes one server per
// session with newServer (for the built-in toolsets, each with its own
// database session). The
// go-sdk v1.8.0 handler calls getServer on every request, twice for an
// initialize (once to learn the protocol versions, once for the new
// session), though it uses the result only to open a session. So a request
// that names a session gets a shared server without a database (only its
// protocol versions are read), and the two calls for one initialize share
// one server, recognised by the request's Header map, which the handler's
// req.WithContext copy shares with the original.
func perSessionServers(newServer func() (*mcp.Server, error), log *slog.Logger) func(*http.Request) *mcp.Server {
	probe := mcp.NewServer(&mcp.Implementation{Name: "mcpbench-sdk", Version: "bench"}, nil)
	var mu sync.Mutex
	pending := make(map[uintptr]*mcp.Server)
	return func(r *http.Request) *mcp.Server {
		if r.Header.Get("Mcp-Session-Id") != "" {
			return probe
		}
		key := reflect.ValueOf(r.Header).Pointer()
		mu.Lock()
		srv, ok := pending[key]
		delete(pending, key)
		mu.Unlock()
		if ok {
			return srv
		}
		srv, err := newServer()
		if err != nil {
			log.Error("mcpbench: sdk server: new session", "err", err)
			return nil // the handler answers 400
		}
		mu.Lock()
		pending[key] = srv
		mu.Unlock()
		return srv
	}
}

// newBuiltinServer is one session's tools server over its own database
// session, as in `mcpgate worker`. The database session closes when the MCP
// session ends: the first request starts a watcher on its session.
func newBuiltinServer(ctx context.Context, dsn, user string, log *slog.Logger) (*mcp.Server, error) {
	sess, err := db.Open(ctx, sqlite.Engine{}, db.Config{DSN: dsn}, user, false)
	if err != nil {
		return nil, err
	}
	srv, err := tools.NewServer(tools.Options{User: user, ServerName: "mcpbench-sdk", DB: sess, Logger: log})
	if err != nil {
		sess.Close()
		return nil, err
	}
	var once sync.Once
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			once.Do(func() {
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
					go func() {
						_ = ss.Wait()
						sess.Close()
					}()
				}
			})
			return next(ctx, method, req)
		}
	})
	return srv, nil
}

// newPerUserServer is the built-in toolsets' server as a per-user worker
// runs it (`mcpgate worker` with MCPGATE_WORKER_SCOPE=user): one server for
// every request of user, each call in a transaction of its own on a
// connection from a small pool, or in a handle's. closeDB ends the
// connections.
func newPerUserServer(ctx context.Context, dsn, user string, log *slog.Logger) (*mcp.Server, func(), error) {
	txs, err := tools.NewTransactions(ctx, tools.TransactionOptions{
		Instance: "mcpbench-sdk",
		Open: func(ctx context.Context) (*db.Session, error) {
			return db.Open(ctx, sqlite.Engine{}, db.Config{DSN: dsn}, user, false)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	srv, err := tools.NewServer(tools.Options{User: user, SessionID: "mcpbench-sdk", ServerName: "mcpbench-sdk", Transactions: txs, Logger: log})
	if err != nil {
		_ = txs.Close()
		return nil, nil, err
	}
	return srv, func() { _ = txs.Close() }, nil
}
