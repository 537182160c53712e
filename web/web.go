// Package web serves the pages a person opens in a browser: the connect
// page (what this server is and how to add it to each MCP client, no login)
// and the operator view (/admin, behind an OpenID Connect login; admin.go).
//
// The pages are server-rendered with html/template, styled and scripted by
// one embedded stylesheet and one small script, both inline and pinned by
// their hashes in the Content-Security-Policy: nothing is fetched from
// anywhere but the gateway, and nothing else runs.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html templates/site.css templates/site.js
var files embed.FS

var (
	styleText  = mustRead("templates/site.css")
	scriptText = mustRead("templates/site.js")
	// csp allows the inline stylesheet and script by their hashes, and
	// nothing from elsewhere.
	csp = "default-src 'none'; style-src '" + hash(styleText) + "'; script-src '" + hash(scriptText) +
		"'; img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	pages = template.Must(template.New("").Funcs(template.FuncMap{
		"style":  func() template.CSS { return template.CSS(styleText) },
		"script": func() template.JS { return template.JS(scriptText) },
		"copyable": func(id, label, text string) copyable {
			return copyable{ID: id, Label: label, Text: text}
		},
		"page": func(title, redirect string) pageHead { return pageHead{Title: title, Redirect: redirect} },
		"workers": func(kind string, rows []row, csrf string) workerTable {
			return workerTable{Kind: kind, Rows: rows, CSRF: csrf}
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"mib": func(n int64) string {
			if n <= 0 {
				return "—"
			}
			return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
		},
	}).ParseFS(files, "templates/*.html"))
)

// pageHead is what the head of a page says: its title, and where it
// moves on to at once ("" for nowhere).
type pageHead struct{ Title, Redirect string }

// workerTable is a table of running workers with their end buttons.
type workerTable struct {
	Kind string
	Rows []row
	CSRF string
}

// copyable is a block of text with a copy button.
type copyable struct{ ID, Label, Text string }

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Browser reports whether r is a browser opening the address, not an MCP
// client: a GET that accepts text/html and carries none of what an MCP
// client sends (an event stream in Accept, MCP-Session-Id,
// MCP-Protocol-Version, Last-Event-ID, Authorization). Anything else goes
// to the MCP endpoint unchanged.
func Browser(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	h := r.Header
	for _, k := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "Authorization", "Mcp-Method", "Mcp-Name"} {
		if _, ok := h[k]; ok {
			return false
		}
	}
	html := false
	for _, v := range h.Values("Accept") {
		// Read as the gateway reads Accept (each part's type before any
		// parameter), and more warily: a value that mentions an event
		// stream anywhere, however malformed, is an MCP client's.
		if strings.Contains(strings.ToLower(v), "event-stream") {
			return false
		}
		for part := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(base), "text/html") {
				html = true
			}
		}
	}
	return html
}

// render executes a template into a buffer first, so that a failure is a
// clean 500 rather than half a page.
func render(w http.ResponseWriter, log *slog.Logger, name string, status int, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		log.Error("web: rendering a page", "page", name, "err", err)
		http.Error(w, "web: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	writeHTML(w, status, b.Bytes())
}

// writeHTML writes a page with the headers every page carries.
func writeHTML(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no referrer to other sites; forms keep their Origin
	h.Set("X-Frame-Options", "DENY")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(status)
	w.Write(body)
}
