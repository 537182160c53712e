package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfRecorder returns a bench.profile that samples the whole machine with
// perf(1) (software cpu-clock event, call graphs from Go's frame pointers)
// around one closed loop, into dir/SYSTEM-TOOL-N.perf.data, with the
// system's pids in SYSTEM-TOOL-N.pids. perf sees the gateway and its workers
// from outside, so nothing under test needs a profiling endpoint. Read a
// file with
//
//	perf report -i FILE --pid $(cat PIDS) --no-children --sort comm,symbol
//
// System-wide (-a) rather than -p: per-thread events for tens of workers
// recorded nothing on the test machine, while one event per CPU always works.
func perfRecorder(dir, system string, log io.Writer) func(tool Tool, n int, pids []int) (stop func()) {
	return func(tool Tool, n int, pids []int) func() {
		noop := func() {}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			progress(log, system, "perf: %v", err)
			return noop
		}
		ps := make([]string, len(pids))
		for i, p := range pids {
			ps[i] = strconv.Itoa(p)
		}
		base := filepath.Join(dir, fmt.Sprintf("%s-%s-%d", system, tool.Label, n))
		if err := os.WriteFile(base+".pids", []byte(strings.Join(ps, ",")+"\n"), 0o644); err != nil {
			progress(log, system, "perf: %v", err)
			return noop
		}
		cmd := exec.Command("perf", "record", "-q", "-a", "-g", "-e", "cpu-clock", "-F", "999",
			"--no-buildid", "-o", base+".perf.data")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			progress(log, system, "perf: %v", err)
			return noop
		}
		// perf says nothing when it is ready; give it a moment to set up
		// its per-CPU events before the load starts.
		time.Sleep(300 * time.Millisecond)
		return func() {
			_ = cmd.Process.Signal(syscall.SIGINT)
			// perf ends on SIGINT by design, writing its file first.
			if err := cmd.Wait(); err != nil && !endedBy(err, syscall.SIGINT) {
				progress(log, system, "perf: %v: %s", err, strings.TrimSpace(out.String()))
			}
		}
	}
}

// endedBy tells whether a command's error is its death by sig.
func endedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}
