//go:build linux && cgo

package sandbox

// cgoPSX: the all-threads system calls go through libpsx.
const cgoPSX = true
