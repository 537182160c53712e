// Package sandbox confines a worker process with what the Linux kernel
// offers without a container engine: no_new_privs, a Landlock rule set
// (files, TCP ports, and the ABI 6 scopes for signals and abstract Unix
// sockets) and a seccomp filter that refuses, with EPERM, the system calls
// no MCP server needs. The gateway describes a worker's confinement as a
// Spec; the worker applies it to itself (the built-in worker, right after
// its identity) or the re-exec helper `mcpgate exec-limited` applies it
// before it execs an external worker.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// EnvSpec carries a built-in worker's Spec (JSON) from the gateway; unset
// or empty means no sandbox.
const EnvSpec = "MCPGATE_WORKER_SANDBOX"

// ArgPrefix starts the exec-limited helper's argument that carries an
// external worker's Spec (JSON).
const ArgPrefix = "sandbox="

// Profile names, for logs and metrics.
const (
	ProfileBuiltin  = "builtin"
	ProfileExternal = "external"
)

// Spec is one worker's confinement.
type Spec struct {
	// Profile names the profile the Spec came from (ProfileBuiltin,
	// ProfileExternal), for logs.
	Profile string `json:"profile,omitempty"`
	// Require refuses to start the worker unless the kernel enforces the
	// whole rule set: Landlock ABI 6 or later (files, TCP, scopes) and
	// seccomp. Without it the sandbox is best effort, and what is missing
	// is said loudly.
	Require bool `json:"require,omitempty"`
	// Read lists files and directories the worker may read and execute.
	Read []string `json:"read,omitempty"`
	// Write lists files and directories the worker may read, write,
	// create and remove in.
	Write []string `json:"write,omitempty"`
	// WorkDir adds the directory the worker starts in to Write: the
	// per-user data directory when workers start in theirs.
	WorkDir bool `json:"work_dir,omitempty"`
	// Connect lists the TCP ports the worker may connect to; ConnectAny
	// lets it connect to any. It may bind none.
	Connect    []uint16 `json:"connect,omitempty"`
	ConnectAny bool     `json:"connect_any,omitempty"`
}

// Encode is the Spec as one string, for EnvSpec or after ArgPrefix.
func (s Spec) Encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a struct of strings, bools and numbers always marshals
	}
	return string(b)
}

// Decode reads a Spec that Encode wrote. Relative paths are refused: a
// worker's working directory is not the gateway's.
func Decode(v string) (Spec, error) {
	var s Spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("sandbox: reading the worker's rule set: %w", err)
	}
	for _, p := range append(append([]string(nil), s.Read...), s.Write...) {
		if !filepath.IsAbs(p) {
			return s, fmt.Errorf("sandbox: path %q is not absolute", p)
		}
	}
	return s, nil
}

// ErrUnsupported is returned by Apply for a Spec with Require when the
// kernel cannot enforce the whole rule set.
var ErrUnsupported = errors.New("sandbox: the kernel cannot enforce the whole rule set")

// ApplyArg is the exec-limited helper's first step: when args starts with
// a Spec (ArgPrefix), it applies it to the calling process and returns the
// arguments after it; else it returns args as they are.
func ApplyArg(args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	v, ok := strings.CutPrefix(args[0], ArgPrefix)
	if !ok {
		return args, nil
	}
	spec, err := Decode(v)
	if err != nil {
		return nil, err
	}
	if _, err := Apply(spec); err != nil {
		return nil, err
	}
	return args[1:], nil
}
