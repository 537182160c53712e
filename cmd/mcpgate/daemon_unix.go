//go:build unix

package main

import "syscall"

// detachedAttr puts the daemon in a session of its own, so that the
// client's terminal or process group ending does not end it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
