package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine is what a run ran on, so that figures from two runs are only
// compared when they came from the same kind of machine.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  int64  `json:"mem_total_bytes"`
	GoVersion string `json:"go_version"`
	Kernel    string `json:"kernel"`
	Node      string `json:"node,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg before and after the run: the
	// machine is shared, and a busy one makes every figure worse.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// readLoadAvg returns the 1, 5 and 15 minute load averages.
func readLoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = parseCPUModel(b)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotal, _, _ = parseKB(b, "MemTotal")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "node", "--version").Output(); err == nil {
		m.Node = strings.TrimSpace(string(out))
	}
	return m
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo.
func parseCPUModel(cpuinfo []byte) string {
	for line := range bytes.Lines(cpuinfo) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && string(bytes.TrimSpace(k)) == "model name" {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}
