package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Protocol revision 2026-07-28 ("modern": no initialize, no session; every
// request carries its version, client info and capabilities in _meta).
const (
	modernVersion = "2026-07-28"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"

	methodHdr = "Mcp-Method"
	nameHdr   = "Mcp-Name"
	paramHdr  = "Mcp-Param-"
)

// removedMethods are the methods 2026-07-28 dropped (changelog §Major 2, 4,
// 5): a modern request for one gets -32601 with HTTP 404 from the gateway,
// and no worker is started for it.
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// modernMeta is what the gateway reads from a modern request's params._meta,
// with exact keys, as a worker reads them, and the params member Mcp-Name
// mirrors: read once, at the edge, for every check that needs them.
type modernMeta struct {
	version  string          // io.modelcontextprotocol/protocolVersion; "" when absent
	hasCaps  bool            // io.modelcontextprotocol/clientCapabilities is an object
	caps     json.RawMessage // io.modelcontextprotocol/clientCapabilities; nil when absent
	logLevel string          // io.modelcontextprotocol/logLevel; "" when absent
	ok       bool            // params and _meta could be read unambiguously

	// name is the value of params' nameMember (a tools/call's tool name);
	// nameOK is false when there is no such member for the method, or it is
	// absent, ambiguous or not a string (jsonrpc.MemberString). member is
	// the member they were read from (nameMember; "" for none): "name" for
	// a tools/call, whose tool name stepUp then reads here, not again.
	name   string
	nameOK bool
	member string
	// state is params.requestState (MCP 2026-07-28 §Multi Round-Trip
	// Requests), read exactly; hasState is false when it is absent,
	// ambiguous or not a string.
	state    string
	hasState bool
}

// readModernMeta reads m's params._meta and name member. ok is false when
// params or _meta is not an object or has a key twice (then the gateway and
// a worker could disagree on what it says).
func readModernMeta(m *jsonrpc.Message) modernMeta {
	member := nameMember(m.Method)
	meta := readMeta(m.Params)
	if member != "" {
		meta.name, meta.nameOK = jsonrpc.MemberString(m.Params, member)
		meta.member = member
	}
	if mrtrMethods[m.Method] {
		meta.state, meta.hasState = jsonrpc.MemberString(m.Params, "requestState")
	}
	return meta
}

// readMeta is readModernMeta's reading of params._meta.
func readMeta(params json.RawMessage) modernMeta {
	if len(bytes.TrimSpace(params)) == 0 {
		return modernMeta{ok: true}
	}
	meta, ok := jsonrpc.Member(params, "_meta")
	if !ok {
		return modernMeta{}
	}
	if meta == nil {
		return modernMeta{ok: true}
	}
	var m modernMeta
	v, ok1 := jsonrpc.Member(meta, metaProtocolVersion)
	c, ok2 := jsonrpc.Member(meta, metaClientCapabilities)
	l, ok3 := jsonrpc.Member(meta, metaLogLevel)
	if !ok1 || !ok2 || !ok3 {
		return modernMeta{}
	}
	_ = json.Unmarshal(v, &m.version)
	_ = json.Unmarshal(l, &m.logLevel)
	m.hasCaps = len(c) > 0 && c[0] == '{'
	m.caps = c
	m.ok = true
	return m
}

// nameMember is the params member that Mcp-Name mirrors (MCP 2026-07-28
// §Standard Request Headers), or "" for methods without one.
func nameMember(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// checkModernHeaders applies MCP 2026-07-28 §Server Validation to a modern
// request: the standard headers must be present and equal to the body, as
// the body is read by the worker. It returns the refusal, or ok. Mcp-Param-*
// headers are checked later, against the worker's tool schemas.
func checkModernHeaders(r *http.Request, m *jsonrpc.Message, meta modernMeta) (failure, bool) {
	for _, h := range []string{methodHdr, nameHdr, protoHdrName} {
		if len(r.Header.Values(h)) > 1 {
			return repeatedHeader(h), false
		}
	}
	method := r.Header.Get(methodHdr)
	switch {
	case method == "":
		return headerMismatch("the Mcp-Method header is required on MCP " + modernVersion + " requests"), false
	case method != m.Method:
		return headerMismatch("the Mcp-Method header " + quote(clip(method)) + " does not match the body's method " + quote(clip(m.Method))), false
	case !meta.ok:
		return failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: params._meta must be an object without duplicate keys", nil}, false
	case meta.version == "":
		return failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: params._meta." + metaProtocolVersion + " is required on MCP " + modernVersion + " requests", nil}, false
	case meta.version != r.Header.Get(protoHdrName):
		return headerMismatch("the MCP-Protocol-Version header " + quote(clip(r.Header.Get(protoHdrName))) + " does not match params._meta." + metaProtocolVersion + " " + quote(clip(meta.version))), false
	case !meta.hasCaps:
		return failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: params._meta." + metaClientCapabilities + " is required on MCP " + modernVersion + " requests", nil}, false
	}
	if member := nameMember(m.Method); member != "" {
		hv := r.Header.Get(nameHdr)
		if hv == "" {
			return headerMismatch("the Mcp-Name header is required on " + m.Method), false
		}
		name, ok := decodeHeaderValue(hv)
		if !ok {
			return headerMismatch("the Mcp-Name header has invalid characters or Base64"), false
		}
		body, ok := meta.name, meta.nameOK
		if !ok {
			return headerMismatch("params." + member + " must be one string, named exactly so"), false
		}
		if name != body {
			return headerMismatch("the Mcp-Name header " + quote(clip(name)) + " does not match params." + member + " " + quote(clip(body))), false
		}
	}
	return failure{}, true
}

// protoHdrName is the protocol version header (MCP §Protocol Version Header).
const protoHdrName = "MCP-Protocol-Version"

// repeatedHeader refuses a header sent on more than one field line: HTTP
// reads them as one comma-joined list (RFC 9110 §5.3), which no body value
// matches, and an intermediary may read either line.
func repeatedHeader(name string) failure {
	return headerMismatch("the " + name + " header appears more than once; send it once")
}

func headerMismatch(msg string) failure {
	return failure{http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, "gateway: header mismatch: " + msg, nil}
}

// decodeHeaderValue undoes MCP 2026-07-28 §Value Encoding: a value in
// "=?base64?…?=" is Base64 of UTF-8; any other value must be visible ASCII,
// space or tab (RFC 9110 §5.5). ok is false for a value that is neither.
func decodeHeaderValue(v string) (string, bool) {
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if enc, ok = strings.CutSuffix(enc, "?="); ok {
			b, err := base64.StdEncoding.DecodeString(enc)
			return string(b), err == nil
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	return v, true
}

// bodyMetaVersion returns params._meta's protocol version of the first
// request that has one, read exactly; "" when none does.
func bodyMetaVersion(msgs []*jsonrpc.Message) string {
	for _, m := range msgs {
		if m.IsRequest() {
			if v := readMeta(m.Params).version; v != "" {
				return v
			}
		}
	}
	return ""
}
