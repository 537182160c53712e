package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func connectOptions() Options {
	return Options{
		Title: "Team data", Name: "mcpgate", URL: "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://kc.example.com/realms/mcp"},
		MetadataURL:          "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
		Scopes: []Scope{
			{Name: "mcp:use", Grants: "required on every token; read-only tools", Toolsets: []string{"browsing"}, Tools: []string{"list_tables"}},
			{Name: "mcp:write", Grants: "read-write", Toolsets: []string{"browsing", "mutation"}, Tools: []string{"insert_rows"}},
		},
	}
}

func get(t *testing.T, h http.Handler, method, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func TestConnectPage(t *testing.T) {
	c, err := NewConnect(connectOptions())
	require.NoError(t, err)
	res, body := get(t, c, "GET", "/", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.NotContains(t, body, "<script src", "nothing is fetched from elsewhere")
	assert.NotContains(t, body, "<link rel=\"stylesheet\"")
	for _, want := range []string{
		"<h1>Team data</h1>", "https://mcp.example.com/mcp", "https://kc.example.com/realms/mcp",
		"<code>mcp:use</code>", "browsing, mutation",
		"mcpgate install --client claude-code --url https://mcp.example.com/mcp",
		"claude mcp add --transport http mcpgate https://mcp.example.com/mcp",
		"code --add-mcp",
		`href="cursor://anysphere.cursor-deeplink/mcp/install?config=`,
		`href="vscode:mcp/install?`,
		"[mcp_servers.mcpgate]",
		`&#34;mcpServers&#34;`,
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "list_tables", "tool names only with public_tools")
	assert.NotContains(t, body, "#ZgotmplZ", "every link survives the template's URL filter")

	// Every copy button has a label and a target that exists.
	assert.Equal(t, strings.Count(body, `class="copy"`), strings.Count(body, `aria-label="Copy: `))

	res, _ = get(t, c, "POST", "/", nil)
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "only GET and HEAD: / was a 404 before")
}

func TestConnectPublicTools(t *testing.T) {
	o := connectOptions()
	o.PublicTools = true
	c, err := NewConnect(o)
	require.NoError(t, err)
	_, body := get(t, c, "GET", "/", nil)
	assert.Contains(t, body, "<code>list_tables</code>")
}

// TestConnectEscapesConfiguration renders hostile values in every field
// that comes from the configuration: none may open an element, an
// attribute, a script or a link of its own.
func TestConnectEscapesConfiguration(t *testing.T) {
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	o := Options{
		Title: evil, Name: evil, URL: "https://mcp.example.com/mcp?x=" + `"><script>alert(3)</script>`,
		AuthorizationServers: []string{"javascript:alert(4)//" + evil},
		MetadataURL:          "javascript:alert(5)",
		Scopes:               []Scope{{Name: evil, Grants: evil, Toolsets: []string{evil}, Tools: []string{evil}}},
		PublicTools:          true,
	}
	c, err := NewConnect(o)
	if err != nil {
		// A URL install would refuse is refused here too: fine, and
		// nothing was rendered.
		o.URL = "https://mcp.example.com/mcp"
		c, err = NewConnect(o)
	}
	require.NoError(t, err)
	_, body := get(t, c, "GET", "/", nil)
	assert.NotContains(t, body, "<script>alert")
	assert.NotContains(t, body, "<img")
	assert.NotContains(t, body, `href="javascript:`)
	assert.Equal(t, 1, strings.Count(body, "<script>"), "only the page's own script")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
}
