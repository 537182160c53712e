package worker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0] != "Z"
}

// awaitDead waits for a grandchild's death; it cannot be waited for, so
// /proc is polled until SIGKILL has been delivered.
func awaitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: got alive, want dead", pid)
		}
	}
}

func start(t *testing.T, script string) (*Process, <-chan string) {
	t.Helper()
	p, err := StartProcess(ProcessConfig{Command: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		_ = p.ReadLoop(func(l, _ []byte) { lines <- string(l) }, func([]byte, int) {})
		close(lines)
	}()
	t.Cleanup(func() { _ = p.Stop(context.Background(), 0) })
	return p, lines
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		grace  time.Duration
		want   string
	}{
		// A stdio server ends when its input does (MCP §Lifecycle).
		{"ends on stdin EOF", `echo ready; read x; exit 0`, 10 * time.Second, "exit status 0"},
		// Then StopGroup (its own table below).
		{"ignores stdin and SIGTERM: SIGKILL after grace", `trap '' TERM; echo ready; while :; do sleep 0.05; done`, 300 * time.Millisecond, "killed by signal killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, lines := start(t, tc.script)
			if got := <-lines; got != "ready" {
				t.Fatalf("got %q, want ready", got)
			}
			if err := p.Stop(context.Background(), tc.grace); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if got := ExitDescription(p.ExitErr()); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if alive(p.Pid()) {
				t.Errorf("pid %d still there after Stop", p.Pid())
			}
		})
	}
}

// TestStopGroup drives StopGroup on a plain child in its own group, as the
// benchmark harness starts its servers.
func TestStopGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		grace  time.Duration
		ctx    time.Duration // 0: no deadline
		want   string        // how the leader ended
		err    bool
	}{
		{"SIGTERM", `trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`, 10 * time.Second, 0, "exit status 7", false},
		{"ignores SIGTERM: SIGKILL after grace", `trap '' TERM; echo ready; while :; do sleep 0.05; done`, 300 * time.Millisecond, 0, "killed by signal killed", false},
		// The group is asked, not only its leader: a leader that waits for
		// its child ends when the child does.
		{"the whole group gets SIGTERM", `sleep 1000 & trap '' TERM; echo ready; wait $!; exit 5`, 10 * time.Second, 0, "exit status 5", false},
		{"ctx ends first", `trap '' TERM; echo ready; while :; do sleep 0.05; done`, time.Hour, 100 * time.Millisecond, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			done := make(chan struct{})
			var exitErr error
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			go func() {
				exitErr = cmd.Wait()
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				close(done)
			}()
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			err = StopGroup(ctx, pid, done, tc.grace)
			if tc.err {
				// The grace is an hour: StopGroup returned because ctx
				// ended, after killing the group. Whether it saw the
				// leader reaped before returning is a race; either way
				// the leader died of the SIGKILL, not of old age.
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("got %v, want nil or the context's error", err)
				}
				<-done
				if got := ExitDescription(exitErr); got != "killed by signal killed" {
					t.Errorf("got %q, want the leader killed by SIGKILL", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("StopGroup: %v", err)
			}
			if got := ExitDescription(exitErr); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProcessGroupDiesWithTheWorker(t *testing.T) {
	// The worker starts a child that ignores SIGTERM and outlives the
	// worker's own exit; the group kill must still reach it.
	p, lines := start(t, `(trap '' TERM; exec sleep 1000) & echo $!; read x`)
	child, err := strconv.Atoi(<-lines)
	if err != nil {
		t.Fatal(err)
	}
	if !alive(child) {
		t.Fatalf("child %d not running", child)
	}
	if err := p.Stop(context.Background(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	awaitDead(t, child)
}

func TestCrashKillsTheGroup(t *testing.T) {
	p, lines := start(t, `sleep 1000 & echo $!; exit 3`)
	child, _ := strconv.Atoi(<-lines)
	if got := ExitDescription(p.ExitErr()); got != "exit status 3" {
		t.Errorf("got %q, want exit status 3", got)
	}
	awaitDead(t, child)
}

func TestEnvironmentIsOnlyWhatIsGiven(t *testing.T) {
	t.Setenv("MCPGATE_TEST_SECRET", "x")
	p, lines := start(t, `env | sort`)
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	_ = p.ExitErr()
	for _, kv := range got {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "PWD=") && !strings.HasPrefix(kv, "SHLVL=") && !strings.HasPrefix(kv, "_=") {
			t.Errorf("got %q in the worker's environment, want only what the gateway passes", kv)
		}
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := StartProcess(ProcessConfig{}); err == nil {
		t.Error("no command: got nil error")
	}
	if _, err := StartProcess(ProcessConfig{Command: []string{"/nonexistent/worker"}}); err == nil {
		t.Error("missing program: got nil error")
	}
}

func TestLogLimiter(t *testing.T) {
	var l logLimiter
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range logLinesPerSecond {
		if ok, _ := l.allow(t0); !ok {
			t.Fatalf("line %d: got dropped, want logged", i)
		}
	}
	for range 5 {
		if ok, _ := l.allow(t0.Add(500 * time.Millisecond)); ok {
			t.Fatal("over the limit: got logged, want dropped")
		}
	}
	ok, dropped := l.allow(t0.Add(time.Second))
	if !ok || dropped != 5 {
		t.Errorf("next window: got %v, %d dropped, want true, 5", ok, dropped)
	}
}
