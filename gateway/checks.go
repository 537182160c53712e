package gateway

import (
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
)

// originAllowed applies MCP 2025-11-25 §Transports (Security Warning): a
// present Origin that is not allowed gets 403. Loopback origins are allowed;
// others must be listed.
func (g *Gateway) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser, or a same-origin request without CORS
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // includes the opaque "null" origin
	}
	if auth.IsLoopbackHost(u.Host) {
		return true
	}
	for _, a := range g.opts.AllowedOrigins {
		if strings.Contains(a, "://") {
			if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
				return true
			}
		} else if strings.EqualFold(a, u.Host) || strings.EqualFold(a, u.Hostname()) {
			return true
		}
	}
	return false
}

// accepts reads the Accept header; an absent one accepts anything.
func accepts(r *http.Request) (jsonOK, sseOK bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// isJSONContent reports whether the Content-Type is application/json.
func isJSONContent(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// protocolVersion returns the request's MCP-Protocol-Version; absent means
// 2025-03-26 (MCP 2025-06-18 §Protocol Version Header). ok reports a
// revision that has sessions; 2026-07-28 has none (see modern).
func protocolVersion(r *http.Request) (version string, ok bool) {
	v := r.Header.Get("MCP-Protocol-Version")
	if v == "" {
		return "2025-03-26", true
	}
	return v, slices.Contains(sessionVersions, v)
}

// versionOK answers 400 for an unsupported MCP-Protocol-Version, 405 for
// 2026-07-28 (which has only POST), and reports
// whether the request may go on.
func versionOK(w http.ResponseWriter, r *http.Request) bool {
	v, ok := protocolVersion(r)
	if v == modernVersion {
		// MCP 2026-07-28 §Backward Compatibility: no GET stream, no DELETE.
		w.Header().Set("Allow", "POST")
		errModernMethod.write(w, nil)
		return false
	}
	if !ok {
		unsupportedVersion(v).write(w, nil)
	}
	return ok
}
