package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Names on the combined endpoint. A tool or prompt is
// <server>__<name>; a resource URI is <server>+<uri>, which keeps it a URI
// when the original is one (the server's name, a letter first, then "+"
// joins the original scheme into a scheme RFC 3986 §3.1 allows:
// db+file:///notes), and a resource template is prefixed the same way, so
// that a URI expanded from it routes too. Splitting takes the first
// separator: a server name holds neither "_" nor "+".

// resourceSeparator joins a server's name and a resource URI.
const resourceSeparator = "+"

func prefixName(server, name string) string { return server + NameSeparator + name }

func prefixURI(server, uri string) string { return server + resourceSeparator + uri }

// splitName splits a combined tool or prompt name; ok is false without a
// server prefix or without a name after it.
func splitName(name string) (server, local string, ok bool) {
	server, local, ok = strings.Cut(name, NameSeparator)
	return server, local, ok && server != "" && local != ""
}

// splitURI splits a combined resource URI likewise.
func splitURI(uri string) (server, local string, ok bool) {
	server, local, ok = strings.Cut(uri, resourceSeparator)
	return server, local, ok && server != "" && local != ""
}

// unprefix reads the server a request names and returns it with the
// request's params as that server must get them (its own name), and that
// name (for Mcp-Name). The member read is the one a worker reads: exact,
// unambiguous; anything else is refused. f is the refusal when the
// request names no server the caller reaches.
func (c *Combined) unprefix(p *auth.Principal, m *jsonrpc.Message) (target reach, params json.RawMessage, name, local string, f failure) {
	var what, member, server string
	var ok bool
	switch m.Method {
	case "tools/call":
		what, member = "tool", "name"
	case "prompts/get":
		what, member = "prompt", "name"
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		what, member = "resource", "uri"
	case "completion/complete":
		target, params, f = c.unprefixRef(p, m)
		return target, params, "", "", f
	default:
		return reach{}, nil, "", "", failure{http.StatusNotFound, jsonrpc.CodeMethodNotFound,
			"gateway: method " + quote(clip(m.Method)) + " names no server; the combined endpoint routes tools, prompts, resources and completions by their prefixed names", nil}
	}
	name, named := jsonrpc.MemberString(m.Params, member)
	if !named {
		return reach{}, nil, "", "", failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: params." + member + " must be one string, named exactly so", nil}
	}
	if member == "uri" {
		server, local, ok = splitURI(name)
	} else {
		server, local, ok = splitName(name)
	}
	if ok {
		target, ok = c.find(p, server)
	}
	if !ok {
		return reach{}, nil, "", "", unknownName(what, name)
	}
	params, err := setMember(m.Params, member, jsonString(local))
	if err != nil {
		return reach{}, nil, "", "", errInvalid
	}
	return target, params, name, local, failure{}
}

// unprefixRef is unprefix for completion/complete, whose params.ref names
// a prompt (ref/prompt, name) or a resource template (ref/resource, uri).
func (c *Combined) unprefixRef(p *auth.Principal, m *jsonrpc.Message) (reach, json.RawMessage, failure) {
	bad := failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: params.ref must be a ref/prompt with a name or a ref/resource with a uri, named exactly so", nil}
	ref, ok := jsonrpc.Member(m.Params, "ref")
	if !ok || len(ref) == 0 || ref[0] != '{' {
		return reach{}, nil, bad
	}
	typ, _ := jsonrpc.MemberString(ref, "type")
	var member, what, server, local string
	switch typ {
	case "ref/prompt":
		member, what = "name", "prompt"
	case "ref/resource":
		member, what = "uri", "resource"
	default:
		return reach{}, nil, bad
	}
	name, named := jsonrpc.MemberString(ref, member)
	if !named {
		return reach{}, nil, bad
	}
	if member == "uri" {
		server, local, ok = splitURI(name)
	} else {
		server, local, ok = splitName(name)
	}
	var target reach
	if ok {
		target, ok = c.find(p, server)
	}
	if !ok {
		return reach{}, nil, unknownName(what, name)
	}
	ref2, err := setMember(ref, member, jsonString(local))
	if err != nil {
		return reach{}, nil, errInvalid
	}
	params, err := setMember(m.Params, "ref", ref2)
	if err != nil {
		return reach{}, nil, errInvalid
	}
	return target, params, failure{}
}

// jsonString is s as a JSON string: quoted as it is when it needs no
// escape (a name, usually), else encoded.
func jsonString(s string) json.RawMessage {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return mustMarshal(s)
		}
	}
	return json.RawMessage(`"` + s + `"`)
}

// setMember returns the object obj with member name set to val. The
// caller has read name exactly and unambiguously; the other members pass
// as they are (a duplicate of another key keeps its last value, as a
// worker's decoder reads it).
func setMember(obj json.RawMessage, name string, val json.RawMessage) (json.RawMessage, error) {
	if out, ok := jsonrpc.SetPlainMember(obj, name, val); ok {
		return out, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return nil, err
	}
	fields[name] = val
	return jsonrpc.Marshal(fields)
}

// prefixResult rewrites a routed request's result as the combined
// endpoint's client must see it: resource URIs of server's results (a
// tool's resource links and embedded resources, a prompt's, a read's
// contents) get server's prefix, so they can be read through the combined
// endpoint. Anything it cannot read passes unchanged.
func prefixResult(server, method string, res json.RawMessage) json.RawMessage {
	var key string
	switch method {
	case "tools/call":
		key = "content"
	case "prompts/get":
		key = "messages"
	case "resources/read":
		key = "contents"
	default:
		return res
	}
	if !bytes.Contains(res, []byte(`"uri"`)) {
		return res // the common case: no URI to prefix, nothing decoded
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(res, &fields) != nil {
		return res
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(fields[key], &items) != nil {
		return res
	}
	for _, it := range items {
		switch key {
		case "contents":
			prefixURIMember(server, it, "uri")
		case "messages":
			var content map[string]json.RawMessage
			if json.Unmarshal(it["content"], &content) == nil && content != nil {
				prefixContent(server, content)
				it["content"], _ = jsonrpc.Marshal(content)
			}
		default:
			prefixContent(server, it)
		}
	}
	fields[key], _ = jsonrpc.Marshal(items)
	out, err := jsonrpc.Marshal(fields)
	if err != nil {
		return res
	}
	return out
}

// prefixContent prefixes the URI of one content block: a resource_link's
// uri, an embedded resource's resource.uri.
func prefixContent(server string, block map[string]json.RawMessage) {
	var typ string
	_ = json.Unmarshal(block["type"], &typ)
	switch typ {
	case "resource_link":
		prefixURIMember(server, block, "uri")
	case "resource":
		var res map[string]json.RawMessage
		if json.Unmarshal(block["resource"], &res) == nil && res != nil {
			prefixURIMember(server, res, "uri")
			block["resource"], _ = jsonrpc.Marshal(res)
		}
	}
}

// prefixURIMember prefixes the string member key of obj, when it is one.
func prefixURIMember(server string, obj map[string]json.RawMessage, key string) {
	var s string
	if json.Unmarshal(obj[key], &s) == nil && s != "" {
		obj[key] = mustMarshal(prefixURI(server, s))
	}
}

// encodeHeaderValue is decodeHeaderValue's inverse (MCP 2026-07-28 §Value
// Encoding): a value of visible ASCII as it is, anything else as
// "=?base64?…?=".
func encodeHeaderValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	if strings.HasPrefix(v, "=?base64?") {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
	}
	return v
}
