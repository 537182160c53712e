package gateway

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procState returns a process's state letter from /proc ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces, so cut at ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0]
}

// groupMembers lists the live processes in process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
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
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == stubWorker {
			if st := procState(pid); st != "" && st != "Z" {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
