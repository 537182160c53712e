package gateway

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procStat returns the fields of /proc/pid/stat after the command name,
// starting with the state letter; nil when the process is gone.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces, so cut at ')'.
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
}

// procState returns a process's state letter from /proc ("" when gone).
func procState(pid int) string {
	if f := procStat(pid); len(f) > 0 {
		return f[0]
	}
	return ""
}

// liveProcs returns the pids in /proc that are not zombies and match keep.
func liveProcs(keep func(pid int, stat []string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(pid); len(f) > 2 && f[0] != "Z" && keep(pid, f) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupMembers lists the live processes in process group pgid.
func groupMembers(pgid int) []int {
	return liveProcs(func(_ int, f []string) bool { return f[2] == strconv.Itoa(pgid) })
}

// requireReaped checks that a worker we started is gone from /proc
// altogether: not running, and not a zombie either (we reaped it).
func requireReaped(t *testing.T, pid int) {
	t.Helper()
	if st := procState(pid); st != "" {
		t.Errorf("worker pid %d: got state %q, want gone (reaped)", pid, st)
	}
}

// requireGroupGone waits until no live process is left in group pgid. The
// members are grandchildren of the test, so they cannot be waited for;
// SIGKILL has been sent, and only its delivery is awaited here.
func requireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d: got members %v left, want none", pgid, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stubProcesses lists live processes running the stub worker binary.
func stubProcesses() []int {
	return liveProcs(func(pid int, _ []string) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return err == nil && exe == stubWorker
	})
}

// sessionByID returns a live session, under the table's lock.
func (g *Gateway) sessionByID(id string) *binding {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bound[bindKey{session: id}]
}
