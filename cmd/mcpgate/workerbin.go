package main

import (
	"debug/buildinfo"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/credential"
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

// upstreamWorkerCommand is the worker of a remote server (servers[].url):
// this executable's `mcpgate upstream`, which speaks to the URL for one
// user, started and confined like any other worker. The headers file and
// the CA file are passed by path; their contents never reach an argv.
func upstreamWorkerCommand(e *config.ServerEntry) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mcpgate: finding the upstream worker (this executable): %w", err)
	}
	abs := *e // the worker's directory may not be the gateway's
	for _, p := range []*string{&abs.HeadersFile, &abs.CAFile} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return nil, fmt.Errorf("mcpgate: server %q: %w", e.Name, err)
			}
		}
	}
	return upstreamArgv(exe, &abs), nil
}

// upstreamArgv is upstreamWorkerCommand for the executable exe.
func upstreamArgv(exe string, e *config.ServerEntry) []string {
	argv := []string{exe, "upstream", "--name", e.Name, "--url", e.URL}
	if e.HeadersFile != "" {
		argv = append(argv, "--headers-file", e.HeadersFile)
	}
	if e.CAFile != "" {
		argv = append(argv, "--ca-file", e.CAFile)
	}
	for _, c := range e.Credentials {
		if c.Header != "" { // the gateway hands the user's on this fd (credential.HeaderFeed)
			argv = append(argv, "--credential-fd", strconv.Itoa(credential.HeaderFeedFD))
			break
		}
	}
	return argv
}
