package worker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Limits bound one worker process (worker.limits.*). Zero fields are not
// set. AddressSpace, CPUTime and OpenFiles are rlimits, set by a small
// helper (ExecLimited) between fork and the worker's exec, so they hold
// from the worker's first instruction and for everything it forks.
// Memory, CPU and Processes are cgroup v2 controls in a leaf of the
// gateway's delegated cgroup (Cgroup); the child is born in it
// (clone3 CLONE_INTO_CGROUP), so no window exists there either.
type Limits struct {
	AddressSpace int64         // RLIMIT_AS, bytes
	CPUTime      time.Duration // RLIMIT_CPU, whole seconds; SIGXCPU then SIGKILL a second later
	OpenFiles    int           // RLIMIT_NOFILE
	// UserProcesses is RLIMIT_NPROC: the processes and threads of the
	// worker's account, all its workers together; meaningful only when the
	// worker runs under an account of its own (worker.run_as).
	UserProcesses int
	Memory        int64   // memory.max, bytes (memory.swap.max 0)
	CPU           float64 // cpu.max, in cores
	Processes     int     // pids.max: processes and threads
}

// Names of the limits in a workerExited error's data.limit, as in the
// configuration (worker.limits.<name>).
const (
	LimitAddressSpace = "address_space"
	LimitCPUTime      = "cpu_time"
	LimitMemory       = "memory"
	LimitProcesses    = "processes"
)

// rlimited reports whether an rlimit is set, and so the helper is needed.
func (l Limits) rlimited() bool {
	return l.AddressSpace > 0 || l.CPUTime > 0 || l.OpenFiles > 0 || l.UserProcesses > 0
}

// cgrouped reports whether a cgroup control is set.
func (l Limits) cgrouped() bool { return l.Memory > 0 || l.CPU > 0 || l.Processes > 0 }

// cpuSeconds is CPUTime rounded up to RLIMIT_CPU's unit.
func (l Limits) cpuSeconds() uint64 { return uint64(math.Ceil(l.CPUTime.Seconds())) }

// helperArgv is the argv that runs command under the rlimits: the helper,
// then name=value pairs, "--", the program's path and its arguments.
func (l Limits) helperArgv(helper []string, prog string, command []string) []string {
	argv := append([]string(nil), helper...)
	if l.AddressSpace > 0 {
		argv = append(argv, "as="+strconv.FormatInt(l.AddressSpace, 10))
	}
	if l.CPUTime > 0 {
		argv = append(argv, "cpu="+strconv.FormatUint(l.cpuSeconds(), 10))
	}
	if l.OpenFiles > 0 {
		argv = append(argv, "nofile="+strconv.Itoa(l.OpenFiles))
	}
	if l.UserProcesses > 0 {
		argv = append(argv, "nproc="+strconv.Itoa(l.UserProcesses))
	}
	argv = append(argv, "--", prog)
	return append(argv, command...)
}

// ExecLimited is the limit helper: args are what helperArgv put after the
// helper's own words (as=, cpu=, nofile=, "--", the program's path, then
// its argv from argv[0]). It sets the rlimits on itself and execs the
// program with env, which inherits them; it returns only on failure.
//
// Why a helper rather than prlimit(2) on the child after Start: Go starts
// the child and returns only once it has exec'd the worker, which may by
// then have allocated, opened files or forked children that escape a limit
// set later. SysProcAttr cannot set rlimits. The helper is race-free at
// the cost of one extra exec of this binary per worker start.
func ExecLimited(args []string, env []string) error {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || len(args) < sep+3 {
		return errors.New("worker: exec-limited: want name=value limits, --, the program's path and its argv")
	}
	type rlimit struct {
		res int
		lim syscall.Rlimit
	}
	var lims []rlimit
	var as *rlimit
	for _, a := range args[:sep] {
		name, val, _ := strings.Cut(a, "=")
		n, err := strconv.ParseUint(val, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("worker: exec-limited: %q is not name=positive number", a)
		}
		switch name {
		case "as":
			as = &rlimit{syscall.RLIMIT_AS, syscall.Rlimit{Cur: n, Max: n}}
		case "cpu":
			// SIGXCPU at the soft limit, SIGKILL at the hard one: a
			// program that ignores SIGXCPU (Go does) still stops.
			lims = append(lims, rlimit{syscall.RLIMIT_CPU, syscall.Rlimit{Cur: n, Max: n + 1}})
		case "nofile":
			lims = append(lims, rlimit{syscall.RLIMIT_NOFILE, syscall.Rlimit{Cur: n, Max: n}})
		case "nproc":
			lims = append(lims, rlimit{rlimitNproc, syscall.Rlimit{Cur: n, Max: n}})
		default:
			return fmt.Errorf("worker: exec-limited: unknown limit %q", name)
		}
	}
	// Everything exec needs is built before the address-space limit is
	// set: this process (a Go program, mapping more than it uses) may
	// already be above it, and then could not map one more page.
	prog, err := syscall.BytePtrFromString(args[sep+1])
	if err != nil {
		return fmt.Errorf("worker: exec-limited: %w", err)
	}
	argv, err := syscall.SlicePtrFromStrings(args[sep+2:])
	if err != nil {
		return fmt.Errorf("worker: exec-limited: %w", err)
	}
	envv, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return fmt.Errorf("worker: exec-limited: %w", err)
	}
	if as != nil {
		lims = append(lims, *as) // last
	}
	for i := range lims {
		if err := lowerRlimit(lims[i].res, &lims[i].lim); err != nil {
			return fmt.Errorf("worker: exec-limited: rlimit %d: %w", lims[i].res, err)
		}
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(prog)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("worker: exec-limited: exec %s: %w", args[sep+1], errno)
}

// resolve finds the program's path as exec.Command would, so that the
// helper execs exactly what the gateway would have started.
func resolve(prog string) (string, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		return "", err
	}
	if !strings.Contains(path, "/") {
		return "", fmt.Errorf("worker: %s: not a path", prog)
	}
	return path, nil
}

// outOfMemory reports a stderr line in which a runtime says an allocation
// failed: Go's "fatal error: runtime: out of memory", C's "Cannot allocate
// memory", Python's MemoryError, Node's "heap out of memory".
func outOfMemory(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "out of memory") || strings.Contains(l, "cannot allocate memory") ||
		strings.Contains(l, "memoryerror")
}

// limitHit names the limit that ended a worker, or "" when none did, from
// how it ended: the signal, its CPU time, its cgroup's events, and whether
// it said on stderr that memory ran out.
func (p *Process) limitHitBy(state *os.ProcessState, sawOOM bool) string {
	if state == nil || state.Success() {
		return ""
	}
	l := p.limits
	ws, _ := state.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGXCPU:
		return LimitCPUTime
	case p.leaf != nil && p.leaf.oomKilled():
		return LimitMemory
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && l.CPUTime > 0 &&
		state.UserTime()+state.SystemTime() >= time.Duration(l.cpuSeconds())*time.Second:
		return LimitCPUTime
	case l.AddressSpace > 0 && sawOOM:
		return LimitAddressSpace
	case p.leaf != nil && p.leaf.pidsMaxHit():
		return LimitProcesses
	}
	return ""
}
