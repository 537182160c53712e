// Command hostileworker is a stdio MCP server for the sandbox's tests: each
// tool attempts one thing a worker must not do, and answers "ok" when it
// succeeded or "errno NAME" (EACCES, EPERM, ...) when the kernel refused
// it, so a test can show each attempt refused under the sandbox and
// succeeding without it.
//
// Tools: read {path}, write {path}, connect {port} (TCP on 127.0.0.1),
// bind (a TCP socket to 127.0.0.1, any port), listen (a TCP socket never
// bound), mptcp {port} (connect with Multipath TCP), ptrace {pid} (PTRACE_SEIZE, which does
// not stop the target), signal {pid} (SIGURG, which a Go program ignores),
// abstract {name} (connect to an abstract Unix socket), mount {path} (a
// tmpfs, unmounted at once), unshare (CLONE_NEWUSER, in a child: a
// threaded process cannot), clonens (clone with CLONE_NEWUSER), exec
// (/bin/true: what a worker may do), io_uring, personality, int80 (getpid
// through the 32-bit system call ABI), setuid {path} (runs the program at
// path, which prints its effective uid, and answers with what it printed).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

type args struct {
	Path string `json:"path,omitempty"`
	Port int    `json:"port,omitempty"`
	Pid  int    `json:"pid,omitempty"`
	Name string `json:"name,omitempty"`
}

// outcome is a tool's answer: ok, or the errno that refused it.
func outcome(err error) *mcp.CallToolResult {
	s := "ok"
	if err != nil {
		var en syscall.Errno
		if errors.As(err, &en) {
			s = "errno " + unix.ErrnoName(en)
		} else {
			s = "error " + err.Error()
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "hostileworker", Version: "1"}, nil)
	tool := func(name string, f func(a args) error) {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return outcome(f(a)), nil, nil
		})
	}
	tool("read", func(a args) error { _, err := os.ReadFile(a.Path); return err })
	tool("write", func(a args) error { return os.WriteFile(a.Path, []byte("x"), 0o600) })
	tool("connect", func(a args) error {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(a.Port))
		if err == nil {
			c.Close()
		}
		return err
	})
	tool("bind", func(args) error {
		return onSocket(unix.IPPROTO_TCP, func(fd int) error {
			return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
		})
	})
	tool("listen", func(args) error { // never bound: the kernel picks a port
		return onSocket(unix.IPPROTO_TCP, func(fd int) error { return unix.Listen(fd, 1) })
	})
	tool("mptcp", func(a args) error {
		return onSocket(262, func(fd int) error {
			return unix.Connect(fd, &unix.SockaddrInet4{Port: a.Port, Addr: [4]byte{127, 0, 0, 1}})
		})
	})
	tool("ptrace", func(a args) error {
		// Seized, not attached: the target is not stopped. The worker's
		// exit detaches it.
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(a.Pid), 0, 0, 0, 0)
		return errnoOf(e)
	})
	tool("signal", func(a args) error { return unix.Kill(a.Pid, unix.SIGURG) })
	tool("abstract", func(a args) error {
		c, err := net.Dial("unix", "@"+a.Name)
		if err == nil {
			c.Close()
		}
		return err
	})
	tool("mount", func(a args) error {
		if err := unix.Mount("tmpfs", a.Path, "tmpfs", 0, "size=64k"); err != nil {
			return err
		}
		return unix.Unmount(a.Path, 0)
	})
	tool("unshare", func(args) error {
		return run(&syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWUSER})
	})
	tool("clonens", func(args) error {
		return run(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER})
	})
	tool("exec", func(args) error { return run(&syscall.SysProcAttr{}) })
	tool("io_uring", func(args) error {
		var params [120]byte // struct io_uring_params
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptrOf(&params), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errnoOf(e)
	})
	tool("personality", func(args) error {
		const perLinux32 = 0x0008
		_, _, e := unix.Syscall(unix.SYS_PERSONALITY, perLinux32, 0, 0)
		if e == 0 {
			unix.Syscall(unix.SYS_PERSONALITY, 0, 0, 0)
		}
		return errnoOf(e)
	})
	tool("int80", func(args) error {
		r := int80()
		if r < 0 {
			return syscall.Errno(-r)
		}
		if int(r) != os.Getpid() {
			return fmt.Errorf("the 32-bit getpid answered %d", r)
		}
		return nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "setuid"}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		out, err := exec.Command(a.Path).Output()
		if err != nil {
			return outcome(err), nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// onSocket runs f on a new IPv4 stream socket of protocol proto.
func onSocket(proto int, f func(fd int) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

// run starts /bin/true with attr and waits for it.
func run(attr *syscall.SysProcAttr) error {
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: attr})
	if err != nil {
		return err
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return err
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("/bin/true: %v", ws)
	}
	return nil
}

func errnoOf(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
