package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Memory is the resident memory of a set of processes, in bytes.
type Memory struct {
	// RSS is the sum of VmRSS. Pages shared between processes (the text of
	// one binary run as a thousand workers) count once per process, so RSS
	// overstates what many processes of one binary really cost.
	RSS int64 `json:"rss_bytes"`
	// PSS is the sum of the proportional set size from smaps_rollup: each
	// shared page is divided among the processes that map it, so PSS adds up
	// to what the machine really spends. Zero when the kernel does not
	// expose it.
	PSS int64 `json:"pss_bytes"`
	// Procs is how many processes were counted.
	Procs int `json:"procs"`
}

// ProcFS reads process facts from a proc file system. Root is "/proc" in
// production and a test directory in tests.
type ProcFS struct {
	Root string
}

// parseStatPPID reads the parent pid from /proc/<pid>/stat. The command name in
// field 2 is in parentheses and may itself hold spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStatPPID(stat []byte) (int, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("mcpbench: stat has no command name")
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, errors.New("mcpbench: stat is too short")
	}
	return strconv.Atoi(string(f[1])) // f[0] is the state, f[1] the ppid
}

// parseKB finds "Key:   123 kB" in a /proc status-like file and returns the
// value in bytes.
func parseKB(data []byte, key string) (int64, bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	prefix := []byte(key + ":")
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		f := bytes.Fields(line[len(prefix):])
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, true, fmt.Errorf("mcpbench: malformed %s line %q", key, line)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("mcpbench: malformed %s value: %w", key, err)
		}
		return n * 1024, true, nil
	}
	return 0, false, sc.Err()
}

// parseVmRSS reads VmRSS from /proc/<pid>/status. A kernel thread or a
// zombie has no VmRSS line; it holds no user memory, so that is 0.
func parseVmRSS(status []byte) (int64, error) {
	n, _, err := parseKB(status, "VmRSS")
	return n, err
}

// pids lists the numeric entries of the proc root.
func (p ProcFS) pids() ([]int, error) {
	ents, err := os.ReadDir(p.Root)
	if err != nil {
		return nil, fmt.Errorf("mcpbench: list processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Tree returns roots and all their descendants, each once. Processes that
// exit during the scan are skipped.
func (p ProcFS) Tree(roots ...int) ([]int, error) {
	all, err := p.pids()
	if err != nil {
		return nil, err
	}
	children := make(map[int][]int)
	for _, pid := range all {
		stat, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		ppid, err := parseStatPPID(stat)
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	seen := make(map[int]bool)
	var out []int
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out, nil
}

// Memory sums the memory of pids. A process that has exited since it was
// listed is skipped, not an error: trees change while they are measured.
func (p ProcFS) Memory(pids []int) (Memory, error) {
	var m Memory
	for _, pid := range pids {
		dir := filepath.Join(p.Root, strconv.Itoa(pid))
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			continue
		}
		rss, err := parseVmRSS(status)
		if err != nil {
			return Memory{}, fmt.Errorf("%w (pid %d)", err, pid)
		}
		m.RSS += rss
		m.Procs++
		if rollup, err := os.ReadFile(filepath.Join(dir, "smaps_rollup")); err == nil {
			if pss, _, err := parseKB(rollup, "Pss"); err == nil {
				m.PSS += pss
			}
		}
	}
	return m, nil
}

// TreeMemory is Tree followed by Memory.
func (p ProcFS) TreeMemory(roots ...int) (Memory, error) {
	pids, err := p.Tree(roots...)
	if err != nil {
		return Memory{}, err
	}
	return p.Memory(pids)
}

// parseSchedstat reads the first field of /proc/<pid>/task/<tid>/schedstat:
// the nanoseconds the thread has run on a CPU. Unlike utime and stime in
// stat it is not rounded to clock ticks, which matters when tens of worker
// processes each run for a few milliseconds.
func parseSchedstat(data []byte) (time.Duration, error) {
	f := bytes.Fields(data)
	if len(f) == 0 {
		return 0, errors.New("mcpbench: empty schedstat")
	}
	ns, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("mcpbench: malformed schedstat: %w", err)
	}
	return time.Duration(ns), nil
}

// CPUTime sums the CPU time of every thread of pids. Threads and processes
// that exit meanwhile are skipped, so measure across a window in which the
// processes live.
func (p ProcFS) CPUTime(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		dir := filepath.Join(p.Root, strconv.Itoa(pid), "task")
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, t := range tasks {
			data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
			if err != nil {
				continue
			}
			d, err := parseSchedstat(data)
			if err != nil {
				return 0, fmt.Errorf("%w (pid %d)", err, pid)
			}
			total += d
		}
	}
	return total, nil
}

// parseEnviron reads /proc/<pid>/environ: NAME=value entries, each ended
// by a NUL byte.
func parseEnviron(data []byte) map[string]string {
	env := make(map[string]string)
	for _, kv := range bytes.Split(data, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && len(k) > 0 {
			env[string(k)] = string(v)
		}
	}
	return env
}

// Environ is the environment a process started with. A process of another
// user, or one that has exited, is an error.
func (p ProcFS) Environ(pid int) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "environ"))
	if err != nil {
		return nil, err
	}
	return parseEnviron(data), nil
}
