package auth

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Comparing a proof's htu with the request's URI (RFC 9449 §4.3, RFC 3986
// §6.2.2 and §6.2.3).

// sameURI reports whether htu names r's URI as the client reached it: the
// public URL's scheme and host, and its path prefix followed by the path r
// arrived with. RFC 9449 §4.3 compares after RFC 3986 §6.2.2 and §6.2.3
// normalization: scheme and host case, a default port, percent-encoding
// case. An htu with a query or fragment, user info, or any other host,
// scheme or path, fails.
func (d *dpopState) sameURI(htu string, r *http.Request) bool {
	got, ok := normalURI(htu)
	if !ok {
		return false
	}
	want, ok := normalURI(d.opts.PublicURL + r.URL.EscapedPath())
	return ok && got == want
}

// normalURI is s normalized for comparison, or false when s is not an
// absolute http(s) URI without user info, query or fragment.
func normalURI(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" ||
		strings.ContainsAny(s, "?#") {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host + normalPath(u.EscapedPath()), true
}

// normalPath applies RFC 3986 §6.2.2 to an escaped path: percent-encoded
// unreserved characters decoded, other escapes in upper case, the empty
// path as "/".
func normalPath(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.Contains(p, "%") {
		return p
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+2 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		v, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
		if err != nil {
			b.WriteByte(p[i])
			continue
		}
		c := byte(v)
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		i += 2
	}
	return b.String()
}
