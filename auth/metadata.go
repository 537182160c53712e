package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MetadataRootPath is the RFC 9728 §3 well-known path for a resource at the
// root of its host; clients try it after the path-inserted form.
const MetadataRootPath = "/.well-known/oauth-protected-resource"

// MetadataPath is the path-inserted well-known path for the resource (RFC
// 9728 §3.1), e.g. /.well-known/oauth-protected-resource/mcp for
// https://host/mcp.
func (a *Authenticator) MetadataPath() string { return metadataPath(a.opts.Resource) }

// MetadataURL is the absolute URL of the path-inserted metadata document,
// sent as resource_metadata in every challenge (RFC 9728 §5.1).
func (a *Authenticator) MetadataURL() string { return a.metadataURL }

// MetadataPaths are the paths to mount MetadataHandler at: MetadataPath
// and MetadataRootPath, once each (they are one path for a resource at the
// root of its host, and http.ServeMux panics on a duplicate).
func (a *Authenticator) MetadataPaths() []string {
	if p := a.MetadataPath(); p != MetadataRootPath {
		return []string{p, MetadataRootPath}
	}
	return []string{MetadataRootPath}
}

func metadataPath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return MetadataRootPath
	}
	return MetadataRootPath + strings.TrimSuffix(u.EscapedPath(), "/")
}

func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + metadataPath(resource)
}

// protectedResource is the RFC 9728 §2 document.
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
	// RFC 9728 §2 with RFC 9449: the proof algorithms, and whether only
	// DPoP-bound tokens are accepted; absent when DPoP is off.
	DPoPSigningAlgs   []string `json:"dpop_signing_alg_values_supported,omitempty"`
	DPoPBoundRequired *bool    `json:"dpop_bound_access_tokens_required,omitempty"`
	// RFC 9728 §2 with RFC 8705: certificate-bound tokens are accepted.
	CertBound bool `json:"tls_client_certificate_bound_access_tokens,omitempty"`
}

func (a *Authenticator) buildMetadata() ([]byte, error) {
	doc := protectedResource{
		Resource:               a.opts.Resource,
		AuthorizationServers:   a.opts.AuthorizationServers,
		ScopesSupported:        a.supported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           a.opts.ResourceName,
	}
	doc.CertBound = a.opts.MTLS.Enabled
	if a.dpop != nil {
		required := a.dpop.opts.Mode == DPoPRequired
		doc.DPoPSigningAlgs, doc.DPoPBoundRequired = DPoPAlgorithms(), &required
	}
	if doc.ScopesSupported == nil {
		doc.ScopesSupported = []string{}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}

// MetadataHandler serves the RFC 9728 protected resource metadata at
// MetadataPaths (mount it at each; other paths get 404). It needs no token, answers GET and HEAD, and is readable
// cross-origin so browser-based clients can discover the authorization
// server (RFC 9728 §3; CORS preflight answered here).
func (a *Authenticator) MetadataHandler() http.Handler {
	paths := a.MetadataPaths()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(paths, r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Content-Length", strconv.Itoa(len(a.metadata)))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(a.metadata)
	})
}
