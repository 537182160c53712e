package config

import (
	"path/filepath"
	"strconv"
	"strings"
)

// ConnectAny is the worker.sandbox.connect entry that lets a worker connect
// to any TCP port: written out, never implied.
const ConnectAny = "any"

// WorkerSandbox confines each worker process with the kernel (no_new_privs,
// Landlock, seccomp; docs/sandbox.md). The built-in worker's profile is its
// binary and its database; an external command's is the system's library
// and certificate paths, its dir and the paths below.
type WorkerSandbox struct {
	// Enabled turns the sandbox on for every worker. Default true: where
	// the kernel lacks a part (Landlock before 5.13, TCP rules before ABI
	// 4, scoping before ABI 6) the rest is applied and the gateway says
	// what is missing at start.
	Enabled bool `mapstructure:"enabled"`
	// ReadPaths are absolute files and directories a worker may also read
	// and execute.
	ReadPaths []string `mapstructure:"read_paths"`
	// WritePaths are absolute files and directories a worker may also
	// read, write, create and remove in.
	WritePaths []string `mapstructure:"write_paths"`
	// Connect lists the TCP ports a worker may connect to, or the one
	// entry "any". The built-in worker on PostgreSQL gets its DSN's port
	// added. Empty: no TCP connections.
	Connect []string `mapstructure:"connect"`
	// Require refuses to start a worker unless the kernel enforces the
	// whole rule set (Landlock ABI 6 and seccomp); the gateway then does
	// not start on a kernel without it.
	Require bool `mapstructure:"require"`
}

// ConnectPorts returns worker.sandbox.connect as ports, and whether it is
// "any". Validate has refused anything else.
func (s WorkerSandbox) ConnectPorts() (ports []uint16, any bool) {
	for _, c := range s.Connect {
		if strings.EqualFold(strings.TrimSpace(c), ConnectAny) {
			return nil, true
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(c), 10, 16); err == nil {
			ports = append(ports, uint16(n))
		}
	}
	return ports, false
}

func (c *Config) validateSandbox(v *validator) {
	s := c.Worker.Sandbox
	if s.Require && !s.Enabled {
		v.add("worker.sandbox.require", "is set but worker.sandbox.enabled is false; turn the sandbox on or drop require")
	}
	for key, paths := range map[string][]string{"worker.sandbox.read_paths": s.ReadPaths, "worker.sandbox.write_paths": s.WritePaths} {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				v.add(key, "%q is not an absolute path; a worker's working directory is not the gateway's", p)
			}
		}
	}
	for _, e := range s.Connect {
		e = strings.TrimSpace(e)
		if strings.EqualFold(e, ConnectAny) {
			if len(s.Connect) > 1 {
				v.add("worker.sandbox.connect", "%q allows every port; list ports or write any alone", ConnectAny)
			}
			continue
		}
		if n, err := strconv.ParseUint(e, 10, 16); err != nil || n == 0 {
			v.add("worker.sandbox.connect", "%q is neither a TCP port (1-65535) nor %q", e, ConnectAny)
		}
	}
}
