package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestParseStatPPID(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    int
		wantErr bool
	}{
		{"plain", "1234 (mcpgate) S 1 1234 1234 0 -1", 1, false},
		{"command with spaces and parens", "77 (my (odd) cmd) R 42 77 77 0", 42, false},
		{"no command", "77 R 42", 0, true},
		{"truncated", "77 (x) S", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatPPID([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got ppid %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"present", "Name:\tmcpgate\nVmPeak:\t  9999 kB\nVmRSS:\t   12345 kB\nThreads:\t5\n", 12345 * 1024, false},
		{"kernel thread has none", "Name:\tkthreadd\nThreads:\t1\n", 0, false},
		{"VmRSSx is another key", "VmRSSx:\t1 kB\nVmRSS:\t2 kB\n", 2048, false},
		{"malformed unit", "VmRSS:\t12 MB\n", 0, true},
		{"malformed number", "VmRSS:\tlots kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tt.status))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// fakeProc writes a proc tree: pid → (ppid, rss kB, pss kB).
func fakeProc(t *testing.T, procs map[int][3]int) ProcFS {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"stat":         strconv.Itoa(pid) + " (w) S " + strconv.Itoa(p[0]) + " 0 0",
			"status":       "Name:\tw\nVmRSS:\t" + strconv.Itoa(p[1]) + " kB\n",
			"smaps_rollup": "00400000-7fff [rollup]\nRss:\t" + strconv.Itoa(p[1]) + " kB\nPss:\t" + strconv.Itoa(p[2]) + " kB\n",
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Entries that are not processes are ignored.
	if err := os.Mkdir(filepath.Join(root, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ProcFS{Root: root}
}

func TestTreeMemory(t *testing.T) {
	// 1 ─┬ 10 (gateway) ─┬ 11 (worker) ── 12 (its child)
	//    │               └ 13 (worker)
	//    └ 20 (unrelated)
	fs := fakeProc(t, map[int][3]int{
		1:  {0, 1000, 1000},
		10: {1, 100, 90},
		11: {10, 10, 5},
		12: {11, 1, 1},
		13: {10, 10, 5},
		20: {1, 5000, 5000},
	})
	tests := []struct {
		name      string
		roots     []int
		wantPIDs  []int
		wantRSSKB int64
		wantPSSKB int64
	}{
		{"gateway and all descendants", []int{10}, []int{10, 11, 12, 13}, 121, 101},
		{"a leaf", []int{13}, []int{13}, 10, 5},
		{"overlapping roots count once", []int{11, 10}, []int{10, 11, 12, 13}, 121, 101},
		{"gone process", []int{999}, []int{999}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pids, err := fs.Tree(tt.roots...)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(pids)
			if !slices.Equal(pids, tt.wantPIDs) {
				t.Errorf("got pids %v, want %v", pids, tt.wantPIDs)
			}
			m, err := fs.TreeMemory(tt.roots...)
			if err != nil {
				t.Fatal(err)
			}
			if m.RSS != tt.wantRSSKB*1024 || m.PSS != tt.wantPSSKB*1024 {
				t.Errorf("got RSS %d PSS %d, want %d and %d", m.RSS, m.PSS, tt.wantRSSKB*1024, tt.wantPSSKB*1024)
			}
		})
	}
}

func TestTreeMemoryOfThisProcess(t *testing.T) {
	m, err := ProcFS{Root: "/proc"}.TreeMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.Procs < 1 || m.RSS <= 0 {
		t.Errorf("got %+v, want at least this process with some RSS", m)
	}
}

func TestParseSchedstat(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    time.Duration
		wantErr bool
	}{
		{"three fields", "1027868867 1823646495 841\n", 1027868867, false},
		{"empty", "", 0, true},
		{"garbage", "x 1 2", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSchedstat([]byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCPUTime(t *testing.T) {
	root := t.TempDir()
	for pid, threads := range map[int][]string{10: {"5 0 0", "7 0 0"}, 11: {"100 9 9"}} {
		for i, st := range threads {
			dir := filepath.Join(root, strconv.Itoa(pid), "task", strconv.Itoa(pid+i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte(st), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := ProcFS{Root: root}.CPUTime([]int{10, 11, 12})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(112); got != want {
		t.Errorf("got %v, want %v (every thread of every live process)", got, want)
	}
}
