package web

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procInfo reads a worker process's start time and resident memory from
// /proc (Linux); zero values where that is not there.
func procInfo(pid int) (started time.Time, rss int64) {
	if pid <= 0 {
		return
	}
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f := strings.Fields(v)
				if len(f) == 2 && f[1] == "kB" {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					rss = kb << 10
				}
			}
		}
	}
	// proc(5): field 22 of stat is the start time in clock ticks after
	// boot (USER_HZ, 100 on Linux); the fields after the command name,
	// which may hold spaces and parentheses, follow its last ')'.
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return
	}
	if boot := bootTime(); !boot.IsZero() {
		started = boot.Add(time.Duration(ticks) * (time.Second / 100))
	}
	return
}

// bootTime is /proc/stat's btime, read once: it does not change while the
// system runs.
var bootTime = sync.OnceValue(readBootTime)

func readBootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}
