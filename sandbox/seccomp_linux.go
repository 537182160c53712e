package sandbox

import (
	"fmt"
	"runtime"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Denial is one entry of the deny list: system calls and why no MCP
// server needs them.
type Denial struct {
	Names []string
	Why   string
}

// Denied lists the system calls the filter refuses with EPERM
// (docs/sandbox.md repeats the list).
var Denied = []Denial{
	{[]string{"ptrace", "process_vm_readv", "process_vm_writev"}, "read or change another process's memory: the gateway's, another worker's"},
	{[]string{"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr"}, "change the file system tree, which Landlock's rules are written against"},
	{[]string{"bpf"}, "load kernel programs: a large attack surface of the kernel itself"},
	{[]string{"perf_event_open"}, "observe other processes and the kernel; a frequent source of kernel bugs"},
	{[]string{"keyctl", "add_key", "request_key"}, "the kernel keyrings are not namespaced: keys of the account's other processes"},
	{[]string{"kexec_load", "kexec_file_load"}, "replace the running kernel"},
	{[]string{"init_module", "finit_module", "delete_module"}, "load or unload kernel modules"},
	{[]string{"unshare", "setns"}, "new or other namespaces: a user namespace gives the process capabilities inside it and a far larger kernel surface"},
	{[]string{"userfaultfd"}, "stall the kernel at will inside a copy: the usual tool of kernel race exploits"},
	{[]string{"io_uring_setup", "io_uring_enter", "io_uring_register"}, "a second system call interface that seccomp cannot see into"},
	{[]string{"open_by_handle_at", "name_to_handle_at"}, "open files by handle, around the path walk that Landlock checks"},
	{[]string{"listen"}, "accept connections: Landlock checks bind, but listen on a socket never bound takes an ephemeral port on every address unchecked; a stdio server has no listener"},
}

// ipprotoMPTCP is Multipath TCP's protocol number, which Landlock's TCP
// rules do not cover: an MPTCP socket connects and binds to any port. A
// socket of it gets EPROTONOSUPPORT ("not available here"), on which
// programs that try MPTCP first (Go's listeners) fall back to TCP.
const ipprotoMPTCP = 262

// cloneNamespaceFlags are clone(2)'s flags that create a namespace
// (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET); a
// clone with any of them is refused like unshare.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// personalityQuery is personality(2)'s "tell me, change nothing".
const personalityQuery = 0xffffffff

// policy is the deny list for go-seccomp-bpf: everything allowed but
// Denied, clone with a namespace flag and personality changes (EPERM),
// clone3 (ENOSYS: its flags live in memory a filter cannot read, and libc
// then falls back to clone, which the filter can read) and MPTCP sockets
// (EPROTONOSUPPORT).
func policy() seccomp.Policy {
	var names []string
	for _, d := range Denied {
		names = append(names, d.Names...)
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: names},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags}}},
				{Name: "personality", Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.NotEqual, Value: 0},
					{Argument: 0, Operation: seccomp.NotEqual, Value: personalityQuery},
				}},
			}},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.EPROTONOSUPPORT), NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 2, Operation: seccomp.Equal, Value: ipprotoMPTCP}}},
			}},
		},
	}
}

// filter assembles the policy behind an architecture check: a system call
// made through another ABI than the process's own (the 32-bit int 0x80
// ABI on amd64, whose numbers differ and would pass a filter written for
// the 64-bit ones) is refused with EPERM. go-seccomp-bpf refuses the x32
// ABI itself (ENOSYS) but lets a foreign architecture through to the
// default action.
func filter() ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	p := policy()
	body, err := p.Assemble()
	if err != nil {
		return nil, err
	}
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.EPERM)},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// prepared is the filter Prepare assembled.
var prepared struct {
	sync.Mutex
	f []unix.SockFilter
}

// Prepare assembles the seccomp filter ahead of Apply, which then only
// loads it: a pre-started worker does this before its identity comes, so
// a session does not wait for it.
func Prepare() error {
	prepared.Lock()
	defer prepared.Unlock()
	if prepared.f != nil {
		return nil
	}
	f, err := filter()
	if err != nil {
		return fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	prepared.f = f
	return nil
}

// loadFilter installs the filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC); the calling thread has no_new_privs, which
// TSYNC carries to the others.
func loadFilter() error {
	if err := Prepare(); err != nil {
		return err
	}
	f := prepared.f
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptrOf(&prog))
	runtime.KeepAlive(f)
	if e != 0 {
		return fmt.Errorf("sandbox: seccomp: %w", e)
	}
	if r != 0 {
		return fmt.Errorf("sandbox: seccomp: thread %d could not be synchronised", r)
	}
	return nil
}
