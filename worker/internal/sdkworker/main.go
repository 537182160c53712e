// Command sdkworker is a go-sdk MCP server over stdio for the gateway's
// tests: a worker that speaks 2026-07-28 (and every older revision) the way
// the built-in worker does, with tools a test can drive.
//
// Tools: echo {text}, pid, write (the "gated" tool), region {region (x-mcp-header
// "Region"), text}, log {text} (a log message at info, then the answer),
// hold {text, path} (a log message at info, then the answer once something
// is written to the FIFO at path), addtool {name} (adds a tool:
// tools/list_changed), env; with SDKWORKER_RESOURCES set also link (a
// resource link to note://hello), the resource note://hello and the
// prompt greet (which embeds it). It is served as the built-in worker is
// (tools.Serve, tools.MarkCalls): what it sends during a call names the
// call.
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/tools"
)

type textArgs struct {
	Text string `json:"text,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdkworker", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Logging:   &mcp.LoggingCapabilities{},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return text(a.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(strconv.Itoa(os.Getpid())), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "write"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text("written"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		b, _ := json.Marshal(os.Environ())
		return text(string(b)), nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "region", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"text":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Region string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("region " + a.Region), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "sdkworker", Data: a.Text})
		return text("logged"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, a struct {
		Text string `json:"text"`
		Path string `json:"path"`
	}) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "sdkworker", Data: a.Text})
		if _, err := os.ReadFile(a.Path); err != nil {
			return nil, nil, err
		}
		return text("released"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "addtool"}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
		Name string `json:"name"`
	}) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: a.Name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(a.Name), nil, nil
		})
		return text("added " + a.Name), nil, nil
	})
	if os.Getenv("SDKWORKER_RESOURCES") != "" {
		// Only when asked, so that other tests see the tools and
		// capabilities they always have: a resource, a tool that links
		// to it, and a prompt that embeds it, which a gateway in front
		// must keep resolvable.
		s.AddResource(&mcp.Resource{URI: "note://hello", Name: "hello", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				if req.Params.URI != "note://hello" {
					return nil, mcp.ResourceNotFoundError(req.Params.URI)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "note://hello", MIMEType: "text/plain", Text: "hello, world"}}}, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "link"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "note://hello", Name: "hello"}}}, nil, nil
		})
		s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "note://hello", Text: "hello, world"}}},
			}}, nil
		})
	}
	tools.MarkCalls(s)
	if err := tools.Serve(context.Background(), s, os.Stdin, os.Stdout); err != nil {
		log.Print(err)
	}
}
