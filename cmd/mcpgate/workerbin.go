package main

import (
	"debug/buildinfo"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
)

// workerBinary is the worker-only build's file name (cmd/mcpgate-worker).
const workerBinary = "mcpgate-worker"

// builtinWorkerCommand is the command that starts the built-in worker of
// the gateway running as exe: the worker-only binary when an executable
// mcpgate-worker from the same build sits beside exe (make build puts it
// there; it links none of the gateway's dependencies, so each session's
// process is lighter), else `exe worker`, the same
// program inside this binary. A mcpgate-worker from another build (an older
// checkout left in bin/, a copy of mcpgate alone) is passed over with a
// warning rather than run against a gateway it may not match.
func builtinWorkerCommand(exe string, log *slog.Logger) []string {
	lean := filepath.Join(filepath.Dir(exe), workerBinary)
	fi, err := os.Stat(lean)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return []string{exe, "worker"}
	}
	if !sameBuild(exe, lean) {
		log.Warn("mcpgate: "+workerBinary+" beside this executable is from another build; starting `mcpgate worker` instead (rebuild both with make build)", "path", lean)
		return []string{exe, "worker"}
	}
	return []string{lean}
}

// sameBuild reports whether the Go programs a and b were built from the
// same module version, commit, tree state, toolchain and flags.
func sameBuild(a, b string) bool {
	ia, err := buildinfo.ReadFile(a)
	if err != nil {
		return false
	}
	ib, err := buildinfo.ReadFile(b)
	if err != nil {
		return false
	}
	return ia.GoVersion == ib.GoVersion && ia.Main.Path == ib.Main.Path && ia.Main.Version == ib.Main.Version &&
		slices.Equal(stamp(ia), stamp(ib))
}

// stamp is the part of a program's build settings that says which source
// and flags it was built from.
func stamp(bi *debug.BuildInfo) []string {
	var s []string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision", "vcs.time", "vcs.modified", "-ldflags", "-tags", "GOOS", "GOARCH", "CGO_ENABLED":
			s = append(s, kv.Key+"="+kv.Value)
		}
	}
	return s
}
