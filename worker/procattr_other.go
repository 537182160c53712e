//go:build unix && !linux

package worker

import "syscall"

// procAttr puts a worker in a process group of its own. Off Linux there
// is no parent-death signal: the gateway runs on Linux, and this build
// exists for the client commands that share its binary.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// bornInCgroup is a no-op: there are no cgroups off Linux.
func bornInCgroup(*syscall.SysProcAttr, int) {}
