package worker

import "syscall"

// procAttr puts a worker in a process group of its own and, with
// Pdeathsig, has the kernel kill it if the gateway itself dies (kill -9,
// a crash) rather than leave it orphaned.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// bornInCgroup starts the process in the cgroup of fd (clone3
// CLONE_INTO_CGROUP).
func bornInCgroup(a *syscall.SysProcAttr, fd int) { a.UseCgroupFD, a.CgroupFD = true, fd }
