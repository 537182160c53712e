package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// maxToolPages bounds the tools/list pages the gateway reads from a worker
// to learn its x-mcp-header annotations.
const maxToolPages = 100

// paramBinding is one x-mcp-header annotation of a tool's inputSchema: the
// argument at path is mirrored in the header Mcp-Param-<header> (MCP
// 2026-07-28 §Custom Headers from Tool Parameters).
type paramBinding struct {
	path   []string
	header string
}

// headerTable holds the x-mcp-header bindings of a worker's tools, so that
// the gateway can check Mcp-Param-* headers against the body: the worker
// never sees the HTTP headers, and a load balancer may route on them.
type headerTable struct {
	mu    sync.Mutex
	tools map[string][]paramBinding // tool name → bindings; nil until loaded
	stale bool                      // tools/list_changed seen since the load
}

// load reads the worker's tools/list (every page) and keeps the bindings. A
// worker that refuses tools/list has no tools and so no bindings.
func (h *headerTable) load(ctx context.Context, uw *binding) error {
	tools := map[string][]paramBinding{}
	cursor := ""
	for range maxToolPages {
		params := map[string]any{}
		if uw.modern {
			params["_meta"] = map[string]any{metaProtocolVersion: modernVersion, metaClientCapabilities: map[string]any{}}
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := uw.call(ctx, "tools/list", params)
		var rpc *errRPC
		if errors.As(err, &rpc) {
			break
		}
		if err != nil {
			return err
		}
		var page struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			break
		}
		for _, t := range page.Tools {
			if b := schemaBindings(t.InputSchema, nil, nil); len(b) > 0 {
				tools[t.Name] = b
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	h.mu.Lock()
	h.tools, h.stale = tools, false
	h.mu.Unlock()
	return nil
}

// schemaBindings collects the x-mcp-header annotations under a JSON Schema's
// properties, depth first.
func schemaBindings(schema json.RawMessage, prefix []string, out []paramBinding) []paramBinding {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	for name, prop := range s.Properties {
		path := append(append([]string{}, prefix...), name)
		var p struct {
			Header string `json:"x-mcp-header"`
		}
		if json.Unmarshal(prop, &p) == nil && p.Header != "" {
			out = append(out, paramBinding{path: path, header: p.Header})
		}
		out = schemaBindings(prop, path, out)
	}
	return out
}

// bindings returns a tool's bindings, reloading the table first when the
// worker said its tools changed.
func (h *headerTable) bindings(ctx context.Context, uw *binding, tool string) ([]paramBinding, error) {
	h.mu.Lock()
	stale := h.stale || h.tools == nil
	h.mu.Unlock()
	if stale {
		if err := h.load(ctx, uw); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tools[tool], nil
}

func (h *headerTable) markStale() {
	h.mu.Lock()
	h.stale = true
	h.mu.Unlock()
}

// checkParamHeaders applies MCP 2026-07-28 §Server Behavior for Custom
// Headers to a tools/call: for each x-mcp-header argument, a header when and
// only when the argument is present and not null, equal to it (integers
// compared as numbers, Base64 sentinel decoded). The arguments are read with
// exact keys, as the worker reads them.
func checkParamHeaders(r *http.Request, params json.RawMessage, binds []paramBinding) (failure, bool) {
	args, ok := jsonrpc.Member(params, "arguments")
	if !ok {
		return headerMismatch("params.arguments must be an object without duplicate keys"), false
	}
	for _, b := range binds {
		name := paramHdr + b.header
		if len(r.Header.Values(name)) > 1 {
			return repeatedHeader(name), false
		}
		hv := r.Header.Get(name)
		val, present, ok := lookupPath(args, b.path)
		if !ok {
			// The worker reads one of the values (encoding/json: the last
			// key, or a case twin); a header could not say which.
			return headerMismatch("argument " + strings.Join(b.path, ".") + " is ambiguous (a key twice, spelled in another case, or under a member that is not an object); send it once, named exactly as the inputSchema does"), false
		}
		if !present {
			if hv != "" {
				return headerMismatch("unexpected " + name + " header: argument " + strings.Join(b.path, ".") + " is absent or null"), false
			}
			continue
		}
		if hv == "" {
			return headerMismatch("the " + name + " header is required: argument " + strings.Join(b.path, ".") + " is present (the tool's inputSchema marks it x-mcp-header; tools/list shows which arguments to mirror)"), false
		}
		dec, ok := decodeHeaderValue(hv)
		if !ok {
			return headerMismatch("the " + name + " header has invalid characters or Base64"), false
		}
		if !primitiveEqual(dec, val) {
			return headerMismatch("the " + name + " header does not match argument " + strings.Join(b.path, ".")), false
		}
	}
	return failure{}, true
}

// lookupPath returns the value at path in args; present is false when it is
// absent or null, or under a member that is absent or null. ok is false when
// a member on the path is ambiguous (a key twice or in another case) or is
// not an object: a worker might still read a value there.
func lookupPath(args json.RawMessage, path []string) (val json.RawMessage, present, ok bool) {
	cur := args
	for _, k := range path {
		if cur == nil || string(cur) == "null" {
			return nil, false, true
		}
		v, ok := jsonrpc.Member(cur, k)
		if !ok {
			return nil, false, false
		}
		cur = v
	}
	if cur == nil || string(cur) == "null" {
		return nil, false, true
	}
	return cur, true, true
}

// maxSafeInteger is 2^53-1, the largest integer an x-mcp-header argument
// may hold.
const maxSafeInteger = 1<<53 - 1

// primitiveEqual compares a decoded header value with a JSON argument: a
// string as is, a boolean as true/false, an integer numerically (42.0 is 42) and only
// within ±(2^53-1).
func primitiveEqual(header string, val json.RawMessage) bool {
	var v any
	if json.Unmarshal(val, &v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		return header == x
	case bool:
		return header == strconv.FormatBool(x)
	case float64:
		h, err := strconv.ParseFloat(header, 64)
		// Only within the JavaScript safe range (MCP 2026-07-28 §Custom
		// Headers), where float64 holds every integer exactly.
		return err == nil && !math.IsNaN(h) && h == x && x == math.Trunc(x) && math.Abs(x) <= maxSafeInteger
	}
	return false
}

// intercept is the worker's notification hook: list changes and resource
// updates go to the subscriptions/listen streams that asked for them, and
// tools/list_changed also makes the header table stale.
func (uw *binding) intercept(m *jsonrpc.Message) bool {
	switch m.Method {
	case "notifications/tools/list_changed":
		uw.headers.markStale()
	case "notifications/prompts/list_changed", "notifications/resources/list_changed", "notifications/resources/updated":
	case "notifications/subscriptions/acknowledged":
		return true // to the gateway's own subscription; listeners get their own
	default:
		return false
	}
	uw.subs.deliver(m)
	return true
}
