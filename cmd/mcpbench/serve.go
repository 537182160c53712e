package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stand-in servers below serve the benchmark's trivial tool, so that the
// sdk system and (until the built-in worker exists) the floor serve exactly
// the same tool through the same go-sdk server code.

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

// runSDKServer serves the tools with the go-sdk's own StreamableHTTPHandler:
// what a team gets by writing its own server with the SDK, default options.
func runSDKServer(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sdk-server", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := newToolServer("mcpbench-sdk")
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
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
