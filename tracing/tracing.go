// Package tracing is the gateway's optional OpenTelemetry tracing, with
// go.opentelemetry.io/otel and its OTLP/HTTP exporter: a span per HTTP
// request and per request forwarded to a worker. A client's W3C trace
// context continues the trace, from the traceparent header or, per request,
// from params._meta (MCP 2026-07-28 §_meta, OpenTelemetry trace context);
// the worker gets the worker call's own context in params._meta, so a
// worker that traces joins the trace.
package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// Tracing makes the gateway's spans.
type Tracing struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	shutdown func(context.Context) error
}

// New exports spans over OTLP/HTTP to endpoint (a URL such as
// http://127.0.0.1:4318; the exporter adds /v1/traces unless the URL has a
// path), in batches, as service "mcpgate" of version.
func New(ctx context.Context, endpoint, version string) (*Tracing, error) {
	if u, err := url.Parse(endpoint); err == nil && (u.Path == "" || u.Path == "/") {
		u.Path = "/v1/traces" // OTLP/HTTP's default path
		endpoint = u.String()
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: tracing.otlp_endpoint: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(resource.NewSchemaless(
		attribute.String("service.name", "mcpgate"), attribute.String("service.version", version))))
	t := NewWithProvider(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// NewWithProvider makes spans with tp (tests pass a recorder).
func NewWithProvider(tp trace.TracerProvider) *Tracing {
	return &Tracing{
		tracer:   tp.Tracer("github.com/mcpgate/mcpgate"),
		prop:     propagation.TraceContext{},
		shutdown: func(context.Context) error { return nil },
	}
}

// Shutdown sends the spans not yet exported, bounded by ctx.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.shutdown(ctx) }

// Middleware makes a server span per HTTP request, continuing the trace of
// the request's traceparent header.
func (t *Tracing) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter remembers the status; Unwrap keeps http.ResponseController
// (flushes, write deadlines) reaching the connection.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Call makes a client span for request m forwarded to a worker
// (gateway.Options.Trace). Its parent is the trace context in m's
// params._meta when valid, else ctx's (the HTTP request's span). It returns
// m with params._meta traceparent and tracestate set to the span's own
// context, and the func that ends the span with the worker's answer.
func (t *Tracing) Call(ctx context.Context, m *jsonrpc.Message) (*jsonrpc.Message, func(*worker.Answer)) {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		params = nil // not an object: the span, without passing it on
	}
	var meta map[string]json.RawMessage
	if params != nil && params["_meta"] != nil && json.Unmarshal(params["_meta"], &meta) != nil {
		params = nil // a _meta that is not an object: left alone
	}
	if sc := t.prop.Extract(context.Background(), metaCarrier(meta)); trace.SpanContextFromContext(sc).IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.SpanContextFromContext(sc))
	}
	name, attrs := m.Method, []attribute.KeyValue{attribute.String("mcp.method.name", m.Method),
		attribute.String("jsonrpc.request.id", strings.Trim(string(m.ID), `"`))}
	if m.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Name != "" {
			name += " " + p.Name
			attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name))
		}
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if params != nil {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		c := propagation.MapCarrier{}
		t.prop.Inject(ctx, c)
		delete(meta, "traceparent")
		delete(meta, "tracestate")
		for k, v := range c {
			meta[k], _ = jsonrpc.Marshal(v)
		}
		var err error
		if params["_meta"], err = jsonrpc.Marshal(meta); err == nil {
			if p, err := jsonrpc.Marshal(params); err == nil {
				m = m.WithParams(p)
			}
		}
	}
	return m, func(a *worker.Answer) { end(span, a) }
}

// end records the answer's outcome on span and ends it.
func end(span trace.Span, ans *worker.Answer) {
	defer span.End()
	outcome, code, _ := gateway.Outcome(ans)
	switch {
	case ans == nil:
		span.SetStatus(codes.Error, "cancelled")
	case code != 0:
		span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", code))
		span.SetStatus(codes.Error, fmt.Sprintf("JSON-RPC error %d", code))
	case outcome != gateway.OutcomeOK && outcome != gateway.OutcomeInputRequired:
		span.SetAttributes(attribute.String("error.type", outcome))
		span.SetStatus(codes.Error, "tool error")
	default:
		// The worker answered: the call succeeded (or asks for input).
		span.SetStatus(codes.Ok, "")
	}
}

// metaCarrier reads W3C trace context from a request's _meta.
type metaCarrier map[string]json.RawMessage

func (c metaCarrier) Get(key string) string {
	var s string
	if json.Unmarshal(c[key], &s) != nil {
		return ""
	}
	return s
}

func (c metaCarrier) Set(string, string) {}

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
