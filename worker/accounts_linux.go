package worker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Capabilities the gateway needs to start a worker under another account:
// CAP_SETUID and CAP_SETGID for the switch between fork and exec, CAP_CHOWN
// to hand each user's data directory to its account, CAP_KILL to stop a
// worker that runs under another uid (SIGTERM, then SIGKILL to its group).
const (
	capChown  = 0
	capKill   = 5
	capSetgid = 6
	capSetuid = 7
)

// ErrCannotSwitch is returned by CanSwitch when this process lacks a
// capability worker.run_as needs.
var ErrCannotSwitch = errors.New("worker: the gateway cannot start workers under other accounts")

// CanSwitch reports whether this process holds CAP_SETUID, CAP_SETGID,
// CAP_CHOWN and CAP_KILL in its effective set (root has them unless its bounding
// set was cut), as worker.run_as other than gateway needs.
func CanSwitch() error {
	eff, err := capSet("CapEff")
	if err != nil {
		return err
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{capSetuid, "CAP_SETUID"}, {capSetgid, "CAP_SETGID"}, {capChown, "CAP_CHOWN"}, {capKill, "CAP_KILL"}} {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: it lacks %s (run it as root, or grant them: the systemd unit's AmbientCapabilities=, a Kubernetes container's securityContext.capabilities.add; docs/gateway.md, Worker accounts)",
			ErrCannotSwitch, strings.Join(missing, ", "))
	}
	return nil
}

// DropAmbient empties the ambient and inheritable capability sets of
// every thread of this process, so that a worker started under another
// account does not carry the gateway's capabilities through its exec: a
// switch from one non-zero uid to another (a gateway that is not root)
// keeps the ambient set, which would hand the worker CAP_SETUID, and an
// inheritable set would be granted again by any program with inheritable
// file capabilities. A gateway running as root needs none of this (the
// kernel clears every set when root becomes another uid), but it is
// harmless. It fails in a binary built with cgo (syscall.AllThreadsSyscall
// is refused there) unless both sets are empty already.
func DropAmbient() error {
	amb, err := capSet("CapAmb")
	if err != nil {
		return err
	}
	inh, err := capSet("CapInh")
	if err != nil || amb == 0 && inh == 0 {
		return err
	}
	// capget then capset with the inheritable set cleared, which clears
	// the ambient set with it; permitted and effective are kept.
	hdr := capHeader{version: linuxCapabilityVersion3}
	var data [2]capData
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("worker: reading capabilities: %w", e)
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("worker: clearing the inheritable and ambient capabilities (which workers would inherit): %w; build the gateway with CGO_ENABLED=0 or run it as root", e)
	}
	return nil
}

// capHeader and capData are the kernel's __user_cap_header_struct and
// __user_cap_data_struct (version 3: two of the latter, 64 bits).
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct {
	effective, permitted, inheritable uint32
}

const linuxCapabilityVersion3 = 0x20080522

// capSet reads one capability set of this process from /proc/self/status.
func capSet(name string) (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("worker: reading capabilities: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("worker: reading capabilities: no %s in /proc/self/status", name)
}

// asAccount makes the child switch to acc between fork and exec:
// its uid, primary gid and exactly acc.Extra as supplementary groups (the
// gateway's own are dropped). The parent-death signal is set after the
// switch (the kernel clears it on a credential change).
func asAccount(a *syscall.SysProcAttr, acc *Account) {
	a.Credential = &syscall.Credential{Uid: acc.UID, Gid: acc.GID, Groups: append([]uint32{}, acc.Extra...)}
}
