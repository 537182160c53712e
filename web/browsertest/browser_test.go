package browsertest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/web"
)

// source is a gateway with two sessions, as the operator view reads it.
type source struct {
	mu    sync.Mutex
	live  []gateway.Live
	ended []string
}

func (s *source) Snapshot() gateway.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return gateway.Snapshot{Replica: "replica-a", Taken: time.Now(), Sessions: append([]gateway.Live(nil), s.live...),
		Limits: []gateway.Usage{{Key: "limits.max_sessions", Used: int64(len(s.live)), Max: 1024}}}
}

func (s *source) End(_ context.Context, id string) (gateway.Live, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.live {
		if l.ID == id {
			s.live = append(s.live[:i], s.live[i+1:]...)
			s.ended = append(s.ended, id)
			return l, true
		}
	}
	return gateway.Live{}, false
}

// site serves the pages as mcpgate serve mounts them, over TLS, with the
// test issuer behind the operator view.
func site(t *testing.T) (*httptest.Server, *source) {
	t.Helper()
	iss := authtest.New(t)
	iss.LoginUser = "alice"
	iss.SetUserClaims("alice", map[string]any{"realm_access": map[string]any{"roles": []any{"mcp-admin"}}})
	src := &source{live: []gateway.Live{
		{ID: "0123456789abcdef0123456789abcdef", Kind: gateway.WorkerSession, User: "bob", ClientID: "claude", Pid: os.Getpid(), LastCall: time.Now()},
		{ID: "fedcba9876543210fedcba9876543210", Kind: gateway.WorkerSession, User: "carol", ReadOnly: true, Pid: os.Getpid()},
	}}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	page, err := web.NewConnect(web.Options{
		Title: "Team data", Name: "mcpgate", URL: srv.URL + "/mcp",
		AuthorizationServers: []string{iss.URL}, MetadataURL: srv.URL + "/.well-known/oauth-protected-resource/mcp",
		Scopes: []web.Scope{
			{Name: "mcp:use", Grants: "required on every token: read-only tools", Toolsets: []string{"listing", "browsing"}},
			{Name: "mcp:write", Grants: "read-write: every tool", Toolsets: []string{"listing", "browsing", "mutation"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	events := web.NewRing(0)
	events.Call(&gateway.CallEvent{Time: time.Now(), Method: "tools/call", User: "bob", Tool: "list_tables", Decision: gateway.DecisionAllowed, Outcome: gateway.OutcomeOK})
	events.Call(&gateway.CallEvent{Time: time.Now(), Method: "tools/call", User: "carol", Tool: "insert_rows", ReadOnly: true, Decision: gateway.DecisionReadOnly, Outcome: "-32601"})
	admin, err := web.NewAdmin(web.AdminOptions{
		Issuer: iss.URL, ClientID: "mcpgate-admin", RedirectURL: srv.URL + "/admin/callback",
		Require: "role:mcp-admin", CookieKey: []byte(strings.Repeat("k", 32)), HTTPClient: iss.Client(),
		Source: src, Events: events, Title: "Team data", Refresh: time.Second,
		CertNotAfter: func() time.Time { return srv.Certificate().NotAfter },
		Logger:       slog.New(slog.NewTextHandler(testLog{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/mcp", page.Negotiate(http.NotFoundHandler()))
	mux.Handle("/{$}", page)
	mux.Handle("/admin", admin)
	mux.Handle("/admin/", admin)
	return srv, src
}

// testLog sends the pages' log to the test's.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// chromium finds the browser; without it the test is skipped, unless
// MCPGATE_REQUIRE_BROWSER is set (CI installs Chromium: .ci/run).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("MCPGATE_REQUIRE_BROWSER") != "" {
		t.Fatal("browsertest: no chromium on PATH; install Debian's chromium package")
	}
	t.Skip("browsertest: no chromium on PATH (apt-get install chromium)")
	return ""
}

// browserTab starts headless Chromium and returns a tab whose console
// errors, uncaught exceptions and error log entries (a failed load, a
// Content-Security-Policy violation) are collected in errs.
func browserTab(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // root in CI containers
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })

	var mu sync.Mutex
	var errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				errs = append(errs, "console: "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			errs = append(errs, "exception: "+ev.ExceptionDetails.Text+" "+describe(ev.ExceptionDetails.Exception))
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				errs = append(errs, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), errs...) }
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	return o.Description
}

// screenshot saves the whole page as name.png under the test's artifacts
// (go test -artifacts keeps them, under -outputdir).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, js)
	}
	return v
}

// accessible checks the page's basics: every control has a name, text
// has WCAG AA contrast, and at 320 px nothing makes the page scroll
// sideways.
func accessible(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if bad := eval[[]string](t, ctx, unlabelledJS); len(bad) > 0 {
		t.Errorf("%s: controls without a label:\n%s", name, strings.Join(bad, "\n"))
	}
	if bad := eval[[]string](t, ctx, contrastJS); len(bad) > 0 {
		t.Errorf("%s: text below WCAG AA contrast:\n%s", name, strings.Join(bad, "\n"))
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(320, 640)); err != nil {
		t.Fatal(err)
	}
	if over := eval[[]string](t, ctx, overflowJS); len(over) > 0 {
		t.Errorf("%s: at 320 px the page scrolls sideways:\n%s", name, strings.Join(over, "\n"))
	}
	screenshot(t, ctx, name+"-narrow")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
}

func TestPagesInChromium(t *testing.T) {
	srv, src := site(t)
	ctx, consoleErrors := browserTab(t)
	defer func() {
		if errs := consoleErrors(); len(errs) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
		}
	}()

	// The connect page, as a browser opening the MCP URL gets it.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/mcp"), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatal(err)
	}
	if h1 := eval[string](t, ctx, `document.querySelector("h1").textContent`); h1 != "Team data" {
		t.Errorf("heading: got %q, want %q", h1, "Team data")
	}
	screenshot(t, ctx, "connect")
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: srv.URL,
	}); err != nil {
		t.Logf("clipboard-read not granted (%v): the copied text is not read back", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[data-copy="mcp-url"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.JSPath(`[...document.querySelectorAll('button[data-copy="mcp-url"]')].filter(b => b.textContent === "Copied")`))); err != nil {
		t.Fatalf("the copy button did not say Copied: %v", err)
	}
	if got := eval[string](t, ctx, `document.getElementById("status").textContent`); got != "Copied to the clipboard" {
		t.Errorf("status: got %q", got)
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err == nil {
		if text != srv.URL+"/mcp" {
			t.Errorf("clipboard: got %q, want %q", text, srv.URL+"/mcp")
		}
	} else {
		t.Logf("clipboard not readable here: %v", err)
	}
	accessible(t, ctx, "connect")

	// The operator view: /admin sends the browser to the issuer, which
	// approves alice at once and sends it back; the page moves on to the
	// view with the new login.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/admin"), chromedp.WaitVisible(chromedp.CSS(`[data-refresh]`))); err != nil {
		t.Fatalf("the operator view did not show after the login: %v", err)
	}
	if who := eval[string](t, ctx, `document.querySelector("nav strong").textContent`); who != "alice" {
		t.Errorf("logged in as %q, want alice", who)
	}
	if !strings.Contains(eval[string](t, ctx, `document.body.textContent`), "replica-a only") {
		t.Error("the view does not say which replica it shows")
	}
	screenshot(t, ctx, "admin")
	accessible(t, ctx, "admin")

	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button[aria-label="End the session 01234567 of bob"]`)),
		chromedp.WaitVisible(chromedp.JSPath(`[...document.querySelectorAll("h2")].filter(h => h.textContent === "Sessions (1)")`)),
	); err != nil {
		t.Fatalf("ending a session: %v", err)
	}
	src.mu.Lock()
	ended := fmt.Sprint(src.ended)
	src.mu.Unlock()
	if ended != "[0123456789abcdef0123456789abcdef]" {
		t.Errorf("ended %s, want bob's session", ended)
	}
	screenshot(t, ctx, "admin-ended")

	// The view refreshes by itself: a session that ends elsewhere leaves
	// it without a reload.
	src.End(context.Background(), "fedcba9876543210fedcba9876543210")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.JSPath(`[...document.querySelectorAll("h2")].filter(h => h.textContent === "Sessions (0)")`))); err != nil {
		t.Fatalf("the view did not refresh by itself: %v", err)
	}
}

const unlabelledJS = `(() => {
  const bad = [];
  document.querySelectorAll('button, a[href], input:not([type=hidden]), select, textarea, [tabindex]').forEach(el => {
    let name = el.getAttribute('aria-label') || '';
    if (!name && el.getAttribute('aria-labelledby')) {
      name = el.getAttribute('aria-labelledby').split(/\s+/).map(id => (document.getElementById(id) || {}).textContent || '').join(' ');
    }
    if (!name && el.labels && el.labels.length) { name = el.labels[0].textContent; }
    if (!name) { name = el.textContent || el.getAttribute('title') || ''; }
    if (!name.trim()) { bad.push(el.outerHTML.slice(0, 120)); }
  });
  return bad;
})()`

const contrastJS = `(() => {
  function parse(c) {
    const m = /rgba?\(([^)]+)\)/.exec(c);
    if (!m) { return null; }
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  }
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  }
  function background(el) {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { return c; }
    }
    return {r: 255, g: 255, b: 255, a: 1};
  }
  const bad = [], seen = new Set();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || seen.has(el)) { continue; }
    seen.add(el);
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || cs.display === 'none' || el.closest('.visually-hidden') || el.closest('script, style')) { continue; }
    const fg = parse(cs.color), bg = background(el);
    const l1 = lum(fg), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight, 10) >= 700;
    const large = size >= 24 || (size >= 18.66 && bold);
    if (ratio < (large ? 3 : 4.5)) {
      bad.push(el.tagName + ' "' + node.textContent.trim().slice(0, 40) + '": ' + ratio.toFixed(2) + ' (' + cs.color + ' on ' + JSON.stringify(bg) + ')');
    }
  }
  return bad;
})()`

const overflowJS = `(() => {
  const out = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width) {
    out.push('document: ' + document.documentElement.scrollWidth + ' > ' + width);
    document.querySelectorAll('body *').forEach(el => {
      const r = el.getBoundingClientRect();
      if (r.right > width + 1 && !el.closest('pre, .table')) { out.push(el.tagName + '.' + el.className + ' ends at ' + Math.round(r.right)); }
    });
  }
  return out.slice(0, 20);
})()`
