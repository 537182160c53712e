package bridge

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// The request headers MCP 2026-07-28 §Streamable HTTP asks a client to
// mirror from the body: Mcp-Method always, Mcp-Name for the methods that
// name a tool, resource or prompt, and Mcp-Param-{Name} for each tools/call
// argument the tool's inputSchema marks with x-mcp-header (learnt from the
// tools/list answers that pass through the bridge). Servers of earlier
// revisions ignore them.

// nameOf is the Mcp-Name source of a request: the params member named
// exactly "name" (or "uri"), read by jsonrpc.Member as the gateway reads it,
// not by encoding/json's struct matching, which also takes "Name" or "NAME"
// and keeps the last of several. A name that is ambiguous (its key twice,
// or also spelled in another case) or not a string has no header: no
// header could say which one the server will read, and the server refuses
// such a request for want of one.
func nameOf(method string, params json.RawMessage) string {
	member := ""
	switch method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	default:
		return ""
	}
	v, _ := jsonrpc.MemberString(params, member)
	return v
}

// encodeValue renders a header value: plain when it is printable ASCII
// without leading or trailing space and not itself in the sentinel form,
// else =?base64?…?= (MCP 2026-07-28 §Value Encoding).
func encodeValue(s string) string {
	plain := s != "" && strings.TrimSpace(s) == s &&
		!(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
	for i := 0; i < len(s) && plain; i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// paramHeaders remembers, per tool, which argument paths are mirrored into
// which Mcp-Param header.
type paramHeaders struct {
	mu    sync.Mutex
	tools map[string]map[string]string // tool → header name → property path (dotted)
}

// learn reads a tools/list result.
func (p *paramHeaders) learn(result json.RawMessage) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tools == nil {
		p.tools = map[string]map[string]string{}
	}
	for _, t := range r.Tools {
		found := map[string]string{}
		walkSchema(t.InputSchema, nil, found, 0)
		if len(found) == 0 {
			delete(p.tools, t.Name)
		} else {
			p.tools[t.Name] = found
		}
	}
}

type schema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Header     string                     `json:"x-mcp-header"`
}

func walkSchema(raw json.RawMessage, path []string, found map[string]string, depth int) {
	var s schema
	if depth > 8 || json.Unmarshal(raw, &s) != nil {
		return
	}
	if s.Header != "" && len(path) > 0 {
		found[s.Header] = strings.Join(path, "\x00")
	}
	for k, v := range s.Properties {
		walkSchema(v, append(append([]string(nil), path...), k), found, depth+1)
	}
}

// set adds the Mcp-Param headers of a tools/call request. The tool name
// and the arguments on each path are read by jsonrpc.Member, as the
// gateway checks them: an argument that is ambiguous (a key twice, or
// spelled in another case) gets no header.
func (p *paramHeaders) set(h http.Header, params json.RawMessage) {
	tool, ok := jsonrpc.MemberString(params, "name")
	if !ok {
		return
	}
	p.mu.Lock()
	headers := p.tools[tool]
	p.mu.Unlock()
	if len(headers) == 0 {
		return
	}
	args, ok := jsonrpc.Member(params, "arguments")
	if !ok || args == nil {
		return
	}
	for name, path := range headers {
		raw := args
		for _, k := range strings.Split(path, "\x00") {
			if raw, ok = jsonrpc.Member(raw, k); !ok || raw == nil {
				break
			}
		}
		var v any
		if !ok || raw == nil || json.Unmarshal(raw, &v) != nil {
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			continue // null or not a primitive: no header
		}
		h.Set("Mcp-Param-"+name, encodeValue(s))
	}
}
