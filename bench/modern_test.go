package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/mcpgate/mcpgate/workerproto"
)

// The stateless phase against the go-sdk server in its stateless mode
// serving the built-in toolsets as sdk-server -stateless -db does: every
// client negotiates 2026-07-28 at the client's defaults and calls.
func TestModernAgainstStatelessSDKServer(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "demo.db")
	if _, err := sqlite.Ensure(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	srv, closeDB, err := newPerUserServer(context.Background(), dsn, "bench", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeDB)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
	ht := &httpTarget{client: client, endpoint: hs.URL}
	status := Tool{Label: "trivial", Name: "status", Args: json.RawMessage(`{}`)}
	b := &bench{cfg: Config{CallTimeout: 10 * time.Second}, t: ht, trivial: status}
	q := Tool{Label: "realistic", Name: "query", Args: json.RawMessage(`{"sql":"SELECT * FROM order_totals ORDER BY order_id"}`)}
	for _, tool := range []Tool{status, q} {
		lr := b.startModern(context.Background(), ht, tool, 4, 1)
		// No warm-up: every client's first call is measured, however slow
		// the machine.
		b.round(context.Background(), lr, 0, 100*time.Millisecond)
		m := b.finishModern(lr, ht, 1, false)
		if m.Errors != 0 || m.Calls == 0 || m.Users != 1 || m.Sessions != 4 || m.Workers != nil {
			t.Errorf("%s: got %+v", tool.Name, m)
		}
	}
	// Two users asked of a target with one: the run is not made.
	if got := modernUsersOf(ht, 2); got != nil {
		t.Errorf("modernUsersOf(one-user target, 2) = %q, want nil", got)
	}
}

// A system that answers 2026-07-28 with a session (a stateful go-sdk
// server: the client falls back) must fail the phase, not measure sessions.
func TestOpenModernRefusesFallback(t *testing.T) {
	ht := testTargets(t)["http"].(*httpTarget)
	s, err := ht.openModern(context.Background(), 0)
	if err == nil {
		_ = s.Close()
		t.Fatal("openModern against a stateful server: got a client, want the fallback refused")
	}
	if !strings.Contains(err.Error(), "fell back") {
		t.Errorf("got %v, want it to say the system fell back", err)
	}
}

// Stateless clients act as users in turn, each with its user's token.
func TestOpenModernUsesEachUsersToken(t *testing.T) {
	var seen []string
	srv := newToolServer("test")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); !slices.Contains(seen, a) {
			seen = append(seen, a)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
	ht := &httpTarget{client: client, endpoint: hs.URL, users: []string{"u1", "u2"}, userTokens: []string{"t1", "t2"}}
	for u := range 2 {
		s, err := ht.openModern(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
	}
	if !slices.Equal(seen, []string{"Bearer t1", "Bearer t2"}) {
		t.Errorf("got Authorization headers %q, want each user's token", seen)
	}
	if got := modernUsersOf(ht, 1); !slices.Equal(got, []string{"u1"}) {
		t.Errorf("modernUsersOf(.., 1) = %q", got)
	}
}

func TestParseEnviron(t *testing.T) {
	env := parseEnviron([]byte("A=1\x00B=x=y\x00=bad\x00C=\x00"))
	if len(env) != 3 || env["A"] != "1" || env["B"] != "x=y" || env["C"] != "" {
		t.Errorf("got %q", env)
	}
}

// The census reads real processes' environments: two per-user workers of
// two users and a session worker, all the test binary's stand-in worker.
func TestCensusUserWorkers(t *testing.T) {
	start := func(scope, user string) int {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "MCPBENCH_TEST_STDIO_SERVER=1", workerproto.EnvScope+"="+scope, workerproto.EnvUser+"="+user)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close() // the stand-in serves until stdin closes
			_ = cmd.Wait()
		})
		return cmd.Process.Pid
	}
	pids := []int{start(workerproto.ScopeUser, "ann"), start(workerproto.ScopeUser, "bob"), start(workerproto.ScopeSession, "ann"), os.Getpid()}
	p := ProcFS{Root: "/proc"}
	for _, tc := range []struct {
		users   []string
		workers int
	}{{[]string{"ann"}, 1}, {[]string{"ann", "bob"}, 2}, {[]string{""}, 2}, {[]string{"cy"}, 0}} {
		c, err := p.CensusUserWorkers(pids, tc.users, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Workers != tc.workers || c.Users != tc.workers {
			t.Errorf("users %q: got %d workers of %d users, want %d", tc.users, c.Workers, c.Users, tc.workers)
		}
		if tc.workers > 0 && (c.Memory.RSS <= 0 || c.PerUserRSS != c.Memory.RSS/int64(c.Users)) {
			t.Errorf("users %q: got memory %+v, per user %d", tc.users, c.Memory, c.PerUserRSS)
		}
	}
}

// A pre-started worker's environment names no user: the census finds it by
// the gateway's log line instead.
func TestCensusLoggedUserWorkers(t *testing.T) {
	start := func() int {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "MCPBENCH_TEST_STDIO_SERVER=1", workerproto.EnvPrestarted+"=true")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
		return cmd.Process.Pid
	}
	a, b, idle := start(), start(), start()
	log := fmt.Sprintf("time=x level=INFO msg=\"gateway: worker started\" session=s user=zed pid=%d\n"+
		"time=x level=INFO msg=\"gateway: per-user worker started\" worker=u-1 user=ann read_only=false pid=%d\n"+
		"time=x level=INFO msg=\"gateway: per-user worker started\" worker=u-2 user=\"bob \\\"b\\\"\" read_only=true pid=%d\n", idle, a, b)
	logged := parseUserWorkerLog([]byte(log))
	if len(logged) != 2 || logged[a] != "ann" || logged[b] != `bob "b"` {
		t.Fatalf("parsed %v", logged)
	}
	p := ProcFS{Root: "/proc"}
	c, err := p.CensusUserWorkers([]int{a, b, idle}, []string{""}, logged)
	if err != nil {
		t.Fatal(err)
	}
	if c.Workers != 2 || c.Users != 2 || c.Memory.RSS <= 0 {
		t.Errorf("got %+v", c)
	}
	if c, _ := p.CensusUserWorkers([]int{a, b, idle}, []string{""}, nil); c.Workers != 0 {
		t.Errorf("without the log: %d workers, want 0 (their environment names no user)", c.Workers)
	}
}

func TestReadUserTokens(t *testing.T) {
	dir := t.TempDir()
	for name, tok := range map[string]string{"b-02.jwt": "tb\n", "b-01.jwt": "ta\n", "env.sh": "x", "empty.jwt": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	users, toks, err := readUserTokens(dir)
	if err != nil || !slices.Equal(users, []string{"b-01", "b-02"}) || !slices.Equal(toks, []string{"ta", "tb"}) {
		t.Errorf("got %q %q %v", users, toks, err)
	}
	if _, _, err := readUserTokens(t.TempDir()); err == nil {
		t.Error("an empty directory: got no error")
	}
}

func TestParseConfigModern(t *testing.T) {
	cfg, err := parseConfig(nil, "/self", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModernClients != 64 || !slices.Equal(cfg.ModernUsers, []int{1, 16, 64}) ||
		strings.Join(cfg.SDKStateless, " ") != "/self sdk-server --stateless --listen {addr}" {
		t.Errorf("got clients %d users %v sdk-stateless %q", cfg.ModernClients, cfg.ModernUsers, cfg.SDKStateless)
	}
	cfg, err = parseConfig([]string{"-modern-clients", "8", "-modern-users", "2, 4", "-user-tokens", "/t"}, "/self", io.Discard)
	if err != nil || cfg.ModernClients != 8 || !slices.Equal(cfg.ModernUsers, []int{2, 4}) || cfg.UserTokens != "/t" {
		t.Errorf("got %+v %v", cfg, err)
	}
	for _, bad := range [][]string{{"-modern-users", "0"}, {"-modern-users", "x"}, {"-modern-clients", "-1"}} {
		if _, err := parseConfig(bad, "/self", io.Discard); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
}
