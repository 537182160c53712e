package gateway

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
)

// CORS for browser MCP clients on an allowed Origin (Fetch §CORS protocol).
// The gateway's own headers must be readable by a page: the session id, and
// the challenge a client needs to start OAuth.
const (
	corsAllowMethods  = "GET, POST, DELETE, OPTIONS"
	corsAllowHeaders  = "Authorization, Content-Type, Accept, MCP-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name, DPoP"
	corsExposeHeaders = "MCP-Session-Id, WWW-Authenticate, DPoP-Nonce"
	corsMaxAge        = 10 * 60 // seconds a browser may cache a preflight
)

// guard runs the checks every request to /mcp gets before anything else,
// authentication included: the loopback Host check and the Origin check (MCP
// 2025-11-25 §Security Warning: a present Origin that is not allowed gets
// 403, on every method). An allowed Origin gets CORS headers, and its
// preflight is answered here, since a browser sends no credentials on it.
func (g *Gateway) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.opts.LoopbackHostCheck && !auth.IsLoopbackHost(r.Host) && !g.hostAllowed(r.Host) {
			g.log.Warn("gateway: refused a non-loopback Host", "host", clip(r.Host), "remote", r.RemoteAddr)
			errHostForbidden.write(w, nil)
			return
		}
		if !g.originAllowed(r) {
			g.log.Warn("gateway: refused an Origin", "origin", clip(r.Header.Get("Origin")), "remote", r.RemoteAddr)
			errOriginForbidden.write(w, nil)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", corsAllowMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders+paramHeadersRequested(r))
				h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether host (with or without port) is one of
// Options.AllowedHosts.
func (g *Gateway) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, a := range g.opts.AllowedHosts {
		if h, _, err := net.SplitHostPort(a); err == nil {
			a = h
		}
		if strings.EqualFold(strings.Trim(a, "[]"), strings.Trim(host, "[]")) {
			return true
		}
	}
	return false
}

// paramHeadersRequested returns, for a preflight, the Mcp-Param-* headers it
// asks for (MCP 2026-07-28 x-mcp-header; CORS cannot allow a prefix), each
// after ", ".
func paramHeadersRequested(r *http.Request) string {
	var b strings.Builder
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, h := range strings.Split(v, ",") {
			h = strings.TrimSpace(h)
			if len(h) > len(paramHdr) && strings.EqualFold(h[:len(paramHdr)], paramHdr) && isToken(h) {
				b.WriteString(", " + h)
			}
		}
	}
	return b.String()
}

// isToken reports whether s is an RFC 9110 token (a header name).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
