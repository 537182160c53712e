//go:build linux && !cgo

package sandbox

// cgoPSX: the all-threads system calls go through the Go runtime.
const cgoPSX = false
