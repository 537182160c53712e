package gateway

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// connect opens a go-sdk client session to url on protocol 2025-11-25 (a
// session; the SDK's default is 2026-07-28, see connectModern).
func connect(t testing.TB, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, opts)
}

func connectWith(t testing.TB, tr *mcp.StreamableClientTransport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, tr, opts, "2025-11-25")
}

// connectModern opens a go-sdk client at its defaults: it negotiates
// 2026-07-28 with server/discover.
func connectModern(t testing.TB, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, opts, "")
}

func connectVersion(t testing.TB, tr *mcp.StreamableClientTransport, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var copts *mcp.ClientSessionOptions
	if version != "" {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, tr, copts)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "tool %s failed: %+v", tool, res.Content)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text
}

func TestSDKClientEndToEnd(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	progress := make(chan float64, 10)
	logs := make(chan string, 10)
	cs := connect(t, srv.URL, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: strings.ToUpper(text)}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Progress
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logs <- req.Params.Data.(string)
		},
	})
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		require.Len(t, res.Tools, 15) // the stub's tools
	})
	t.Run("echo", func(t *testing.T) {
		require.Equal(t, "hello", callText(t, cs, "echo", map[string]any{"text": "hello"}))
	})
	t.Run("progress before the answer", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3}}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(context.Background(), params)
		require.NoError(t, err)
		require.Equal(t, "3 steps", res.Content[0].(*mcp.TextContent).Text)
		// The SDK client runs notification handlers asynchronously, so
		// await them, in any order.
		got := []float64{<-progress, <-progress, <-progress}
		slices.Sort(got)
		require.Equal(t, []float64{1, 2, 3}, got)
	})
	t.Run("log before the answer", func(t *testing.T) {
		require.Equal(t, "logged", callText(t, cs, "log", map[string]any{"text": "a line"}))
		require.Equal(t, "a line", <-logs)
	})
	t.Run("sampling round trip", func(t *testing.T) {
		require.Equal(t, "sampled: SHOUT", callText(t, cs, "sample", map[string]any{"text": "shout"}))
	})
	t.Run("concurrent calls in one session", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				want := strings.Repeat("x", i+1)
				if got := callText(t, cs, "echo", map[string]any{"text": want}); got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
		}
		wg.Wait()
	})
}
