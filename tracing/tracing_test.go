package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/tracing"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/worker/workertest"
)

var stubWorker string

func TestMain(m *testing.M) {
	os.Exit(workertest.Main(m, map[string]*string{workertest.Stub: &stubWorker}))
}

const (
	clientTrace  = "0af7651916cd43dd8448eb211c80319c"
	clientParent = "b7ad6b7169203331"
	metaTrace    = "4bf92f3577b34da6a3ce929d0e0e4736"
	metaParent   = "00f067aa0ba902b7"
)

func recorder() (*tracing.Tracing, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return tracing.NewWithProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), rec
}

// TestCallContinuesMetaTrace: a request's _meta traceparent is the worker
// span's parent; the worker gets the worker span's own context in _meta,
// and every other member of params is left as it was.
func TestCallContinuesMetaTrace(t *testing.T) {
	tr, rec := recorder()
	m := &jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`7`), Method: "tools/call",
		Params: json.RawMessage(`{"name":"query","arguments":{"sql":"select 1"},"_meta":{"progressToken":3,"traceparent":"00-` + metaTrace + `-` + metaParent + `-01","tracestate":"x=1"}}`)}
	out, end := tr.Call(context.Background(), m)
	end(&worker.Answer{Data: []byte(`{"jsonrpc":"2.0","id":7,"result":{"isError":true}}`)})

	spans := rec.Ended()
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, "tools/call query", s.Name())
	assert.Equal(t, trace.SpanKindClient, s.SpanKind())
	assert.Equal(t, metaTrace, s.SpanContext().TraceID().String())
	assert.Equal(t, metaParent, s.Parent().SpanID().String())
	assert.Equal(t, codes.Error, s.Status().Code, "a tool error")

	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(out.Params, &p))
	assert.Equal(t, "query", p.Name)
	assert.JSONEq(t, `{"sql":"select 1"}`, string(p.Arguments))
	assert.Equal(t, float64(3), p.Meta["progressToken"])
	assert.Equal(t, "00-"+metaTrace+"-"+s.SpanContext().SpanID().String()+"-01", p.Meta["traceparent"])
	assert.Equal(t, json.RawMessage(`7`), out.ID)
}

// TestCallLeavesOddParams: params or _meta that are not objects pass
// unchanged; the span is still made.
func TestCallLeavesOddParams(t *testing.T) {
	tr, rec := recorder()
	for _, params := range []string{`[1,2]`, `{"name":"x","_meta":"text"}`} {
		m := &jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(params)}
		out, end := tr.Call(context.Background(), m)
		end(nil)
		assert.Equal(t, params, string(out.Params))
	}
	assert.Len(t, rec.Ended(), 2)
}

// tracedGateway serves a gateway with tracing tr (and observers, when
// given) over the stub worker; post sends one message on a session (none
// for initialize).
func tracedGateway(t *testing.T, tr *tracing.Tracing, observers ...gateway.Observer) (post func(sid, body string) *http.Response) {
	wl, err := worker.NewLauncher([]string{stubWorker}, worker.LauncherOptions{StopGrace: 2 * time.Second})
	require.NoError(t, err)
	g, err := gateway.New(wl, gateway.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Trace: tr.Call, Observers: observers})
	require.NoError(t, err)
	srv := httptest.NewServer(tr.Middleware(g))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, g.Close(ctx))
	})
	return func(sid, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientParent+"-01")
		if sid != "" {
			req.Header.Set("MCP-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestGatewaySpans: through the gateway, the HTTP span continues the
// client's traceparent header and the worker call is its child.
func TestGatewaySpans(t *testing.T) {
	tr, rec := recorder()
	post := tracedGateway(t, tr)
	resp := post("", initBody)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sid := resp.Header.Get("MCP-Session-Id")
	resp = post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var server, call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "tools/call echo":
			call = s
		case "POST /":
			server = s // the last one: the tools/call's
		}
	}
	require.NotNil(t, call)
	require.NotNil(t, server)
	assert.Equal(t, clientTrace, server.SpanContext().TraceID().String())
	assert.Equal(t, clientParent, server.Parent().SpanID().String())
	assert.Equal(t, server.SpanContext().SpanID(), call.Parent().SpanID(), "the worker call is the request's child")
	assert.Equal(t, codes.Ok, call.Status().Code)
}

// TestGatewaySpanStatus: with an observer (the audit trail, the metrics)
// watching the same calls, a call's span ends with its own answer: OK for
// a result, an error for a failed call, never "cancelled" for an answered
// one.
func TestGatewaySpanStatus(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.NewWithProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	post := tracedGateway(t, tr, gateway.NopObserver{})
	resp := post("", initBody)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sid := resp.Header.Get("MCP-Session-Id")
	require.Equal(t, http.StatusOK, post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`).StatusCode)
	require.Equal(t, http.StatusOK, post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nosuch","arguments":{}}}`).StatusCode)

	got := map[string]sdktrace.Status{}
	for _, s := range exp.GetSpans() {
		got[s.Name] = s.Status
	}
	require.Contains(t, got, "tools/call echo")
	require.Contains(t, got, "tools/call nosuch")
	assert.Equal(t, codes.Ok, got["tools/call echo"].Code, "an ok call: %+v", got["tools/call echo"])
	assert.Equal(t, sdktrace.Status{Code: codes.Error, Description: "JSON-RPC error -32602"}, got["tools/call nosuch"])
}

// TestExportsOTLP: New sends the spans to the collector's /v1/traces over
// OTLP/HTTP; Shutdown flushes them.
func TestExportsOTLP(t *testing.T) {
	got := make(chan string, 8)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type") + " " + fmt.Sprint(len(body) > 0)
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	tr, err := tracing.New(context.Background(), collector.URL, "test")
	require.NoError(t, err)
	srv := httptest.NewServer(tr.Middleware(http.NotFoundHandler()))
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.Shutdown(ctx))
	select {
	case req := <-got:
		assert.Equal(t, "POST /v1/traces application/x-protobuf true", req)
	default:
		t.Fatal("no export reached the collector by Shutdown")
	}
}
