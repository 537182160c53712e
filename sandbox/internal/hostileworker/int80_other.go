//go:build !amd64

package main

import (
	"syscall"
	"unsafe"
)

// int80 reports ENOSYS: only amd64 has a second, 32-bit system call ABI.
func int80() int64 { return -int64(syscall.ENOSYS) }

func uintptrOf[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }
