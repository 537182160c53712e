package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/worker"
)

// hostileWorker builds the sandbox tests' hostile stdio MCP server once.
var hostileWorker = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpgate-hostile-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "hostileworker")
	out, err := exec.Command("go", "build", "-o", path, "github.com/mcpgate/mcpgate/sandbox/internal/hostileworker").CombinedOutput()
	if err != nil {
		return "", &buildError{err, string(out)}
	}
	return path, nil
})

// needSandboxHost skips a test that needs root and the whole rule set, or
// fails it where MCPGATE_REQUIRE_ROOT=1 says the machine has both (CI).
func needSandboxHost(t *testing.T) {
	t.Helper()
	sup := sandbox.Probe()
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "not root: reading /etc/shadow, mount and unshare would fail without the sandbox too"
	case !sup.Full():
		why = "the kernel lacks part of the sandbox: " + sup.Missing()
	default:
		return
	}
	if os.Getenv("MCPGATE_REQUIRE_ROOT") == "1" {
		t.Fatalf("MCPGATE_REQUIRE_ROOT=1 but %s", why)
	}
	t.Skip(why)
}

// callText calls a tool and returns its text.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	return res.Content[0].(*mcp.TextContent).Text
}

// startStdio starts cmd as a stdio MCP server and connects to it.
func startStdio(t *testing.T, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestSandboxRefusesHostileWorker: a worker under the external profile,
// started by the real helper (mcpgate exec-limited, this test binary), is
// refused each thing a hostile stdio server would try, with the errno the
// kernel gives; the same worker without the sandbox, as the same account
// (root), succeeds at each, so the refusals are the sandbox's and not the
// machine's. What the profile grants (its data directory, a declared port,
// running a program) works under it.
func TestSandboxRefusesHostileWorker(t *testing.T) {
	needSandboxHost(t)
	hostile, err := hostileWorker()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)

	dir := t.TempDir()
	data, outside, mnt := filepath.Join(dir, "data"), filepath.Join(dir, "outside"), filepath.Join(dir, "mnt")
	for _, d := range []string{data, outside, mnt} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	// What a gateway holds: its configuration and TLS key.
	conf, key := filepath.Join(dir, "gateway.yaml"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(conf, []byte("auth:\n  issuer: https://kc.example.com\n"), 0o600))
	require.NoError(t, os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o600))
	// Two loopback services: one the profile declares, one it does not.
	declared, undeclared := listen(t, "tcp", "127.0.0.1:0"), listen(t, "tcp", "127.0.0.1:0")
	abstract := "mcpgate-sandbox-test-" + strconv.Itoa(os.Getpid())
	listen(t, "unix", "@"+abstract)
	// Another process outside the worker, standing for the gateway: a
	// seized or signalled test process would stop on its runtime's signals.
	victim := exec.Command("sleep", "600")
	require.NoError(t, victim.Start())
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })

	spec := sandbox.External(sandbox.Spec{Write: []string{data}, Connect: []uint16{port(declared)}}, hostile, "")
	confined := startStdio(t, exec.Command(exe, limitHelperCommand, sandbox.ArgPrefix+spec.Encode(), "--", hostile, hostile))
	free := startStdio(t, exec.Command(hostile))

	for _, c := range []struct {
		name, tool string
		args       map[string]any
		want       string // under the sandbox; without it, every attempt answers ok
	}{
		{"read /etc/shadow", "read", map[string]any{"path": "/etc/shadow"}, "errno EACCES"},
		{"read the gateway's configuration", "read", map[string]any{"path": conf}, "errno EACCES"},
		{"read the gateway's TLS key", "read", map[string]any{"path": key}, "errno EACCES"},
		{"write outside the data directory", "write", map[string]any{"path": filepath.Join(outside, "x")}, "errno EACCES"},
		{"write in the data directory", "write", map[string]any{"path": filepath.Join(data, "x")}, "ok"},
		{"connect to a port not declared", "connect", map[string]any{"port": port(undeclared)}, "errno EACCES"},
		{"connect to a declared port", "connect", map[string]any{"port": port(declared)}, "ok"},
		{"bind a port", "bind", nil, "errno EACCES"},
		{"listen on a port never bound", "listen", nil, "errno EPERM"},
		{"connect to a port not declared with Multipath TCP", "mptcp", map[string]any{"port": port(undeclared)}, "errno EPROTONOSUPPORT"},
		{"ptrace a process outside", "ptrace", map[string]any{"pid": victim.Process.Pid}, "errno EPERM"},
		{"signal a process outside", "signal", map[string]any{"pid": victim.Process.Pid}, "errno EPERM"},
		{"connect to an abstract Unix socket", "abstract", map[string]any{"name": abstract}, "errno EPERM"},
		{"mount", "mount", map[string]any{"path": mnt}, "errno EPERM"},
		{"unshare(CLONE_NEWUSER)", "unshare", nil, "errno EPERM"},
		{"clone(CLONE_NEWUSER)", "clonens", nil, "errno EPERM"},
		{"io_uring_setup", "io_uring", nil, "errno EPERM"},
		{"personality(PER_LINUX32)", "personality", nil, "errno EPERM"},
		{"the 32-bit system call ABI", "int80", nil, "errno EPERM"},
		{"run a program", "exec", nil, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, callText(t, confined, c.tool, c.args), "under the sandbox")
			assert.Equal(t, "ok", callText(t, free, c.tool, c.args), "without the sandbox")
		})
	}
}

func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

func port(l net.Listener) uint16 { return uint16(l.Addr().(*net.TCPAddr).Port) }

// TestSandboxArgRefusesBadSpec: a helper given a rule set it cannot read
// refuses to exec the worker rather than run it unconfined.
func TestSandboxArgRefusesBadSpec(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	out, err := exec.Command(exe, limitHelperCommand, sandbox.ArgPrefix+`{"read":["relative/path"]}`, "--", "/bin/echo", "echo", "ran").CombinedOutput()
	require.Error(t, err)
	assert.NotContains(t, string(out), "ran")
	assert.True(t, strings.Contains(string(out), "not absolute"), "%s", out)
}

// TestSandboxCheckListsRefusals: mcpgate sandbox check runs a command
// under the external profile and names what the kernel refused it.
func TestSandboxCheckListsRefusals(t *testing.T) {
	needSandboxHost(t)
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("MCPGATE_REQUIRE_ROOT") == "1" {
			t.Fatal("strace is missing (.ci/run installs it)")
		}
		t.Skip("strace is not installed")
	}
	var stderr strings.Builder
	m := &Main{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &stderr, Getenv: func(string) string { return "" }}
	require.NoError(t, m.Run(t.Context(), []string{"sandbox", "check", "--", "/bin/cat", "/etc/shadow"}))
	assert.Contains(t, stderr.String(), `refused: openat(AT_FDCWD, "/etc/shadow", O_RDONLY) = EACCES`)
	assert.Contains(t, stderr.String(), "/bin/cat exited: exit status 1")
	assert.NotContains(t, stderr.String(), "epoll_ctl")
}

// TestGatewayConfinesExternalWorker: worker.sandbox reaches a worker the
// gateway starts: on by default, the hostile worker as worker.command is
// refused /etc/shadow; turned off, it reads it.
func TestGatewayConfinesExternalWorker(t *testing.T) {
	needSandboxHost(t)
	hostile, err := hostileWorker()
	require.NoError(t, err)
	for _, c := range []struct {
		enabled, want, profile string
	}{{"", "errno EACCES", "external"}, {"false", "ok", "none"}} {
		t.Run("enabled="+c.enabled, func(t *testing.T) {
			lg := startLocalGateway(t, map[string]string{"MCPGATE_WORKER_COMMAND": hostile, "MCPGATE_WORKER_SANDBOX_ENABLED": c.enabled})
			sid := lg.session(t)
			code, _, body := lg.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/etc/shadow"}}}`)
			require.Equal(t, 200, code, body)
			assert.Contains(t, body, `"text":"`+c.want+`"`)
			assert.Equal(t, map[string]string{c.profile: "1"}, sandboxStarts(t, lg))
		})
	}
}

// TestGatewayBuiltinWorkerConfinesItself: a built-in worker the gateway
// hands a session, pre-started or not, runs under the seccomp filter by
// the time it answers initialize; a pre-started one that
// no session has claimed yet does not (it confines itself once its
// identity comes).
func TestGatewayBuiltinWorkerConfinesItself(t *testing.T) {
	needSandboxHost(t)
	for _, pool := range []string{"0", "1"} {
		t.Run("pool_size="+pool, func(t *testing.T) {
			lg := startLocalGateway(t, map[string]string{
				"MCPGATE_WORKER_COMMAND": "", "MCPGATE_WORKER_POOL_SIZE": pool,
				"MCPGATE_DATABASE_PATH": filepath.Join(t.TempDir(), "data", "mcpgate.db"),
			})
			sid := lg.session(t)
			code, _, body := lg.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`)
			require.Equal(t, 200, code, body)
			require.NotContains(t, body, `"isError":true`)
			// One seccomp filter more than this process has (a container's
			// own would count for both).
			own := seccompFilters(t, "self")
			confined := 0
			for _, pid := range workerChildren(t) {
				if seccompFilters(t, pid) > own {
					confined++
				}
			}
			assert.Equal(t, 1, confined, "the session's worker, and only it")
			assert.Equal(t, map[string]string{"builtin": "1"}, sandboxStarts(t, lg))
		})
	}
}

// metricsText is a scrape of the gateway's metrics listener.
func (lg *localGateway) metricsText(t *testing.T) string {
	t.Helper()
	addr := regexp.MustCompile(`serving metrics" url=(http://\S+/metrics)`).FindStringSubmatch(lg.log.String())
	require.NotNil(t, addr, "no metrics listener in the log")
	resp, err := http.Get(addr[1])
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(text)
}

// sandboxStarts is mcpgate_worker_sandbox_starts_total from the gateway's
// metrics listener, its values by profile.
func sandboxStarts(t *testing.T, lg *localGateway) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^mcpgate_worker_sandbox_starts_total\{profile="(\w+)"\} (\S+)$`).FindAllStringSubmatch(lg.metricsText(t), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// seccompFilters is the number of seccomp filters on process pid, or -1
// when it is gone.
func seccompFilters(t *testing.T, pid string) int {
	t.Helper()
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp_filters:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	return -1
}

// workerChildren lists the pids of this process's children that run the
// built-in worker.
func workerChildren(t *testing.T) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var pids []string
	me := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[1] != me {
			continue
		}
		pid := filepath.Base(filepath.Dir(p))
		if cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline"); strings.Contains(string(cmdline), "\x00worker") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestSandboxOnAnOlderKernel: on a kernel without the whole rule set the
// gateway says loudly what is missing and confines workers with the rest;
// with worker.sandbox.require it refuses to start.
func TestSandboxOnAnOlderKernel(t *testing.T) {
	orig := probeSandbox
	probeSandbox = func() sandbox.Support { return sandbox.Support{LandlockABI: 3, Seccomp: true} }
	t.Cleanup(func() { probeSandbox = orig })
	for _, require_ := range []bool{false, true} {
		t.Run("require="+strconv.FormatBool(require_), func(t *testing.T) {
			cfg := config.Default()
			cfg.Worker.Sandbox.Require = require_
			var log strings.Builder
			var wopts worker.LauncherOptions
			err := workerSandbox(cfg, slog.New(slog.NewTextHandler(&log, nil)), nil, true, &wopts)
			if require_ {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "Landlock ABI 3")
				assert.Contains(t, err.Error(), "no TCP rules")
				return
			}
			require.NoError(t, err)
			assert.Contains(t, log.String(), "THE WORKER SANDBOX IS INCOMPLETE")
			assert.Contains(t, log.String(), "landlock_abi=3")
			assert.Contains(t, strings.Join(wopts.Env, " "), sandbox.EnvSpec+"=", "the worker still confines itself with what there is")
		})
	}
}
