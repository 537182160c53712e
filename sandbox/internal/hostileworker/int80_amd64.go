package main

import "unsafe"

// int80Getpid calls getpid through the 32-bit system call ABI and returns
// its raw answer (a pid, or -errno), sign-extended from 32 bits.
func int80Getpid() int64

func int80() int64 { return int64(int32(int80Getpid())) }

func uintptrOf[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }
