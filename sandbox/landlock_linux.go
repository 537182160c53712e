package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockConfig is the rule set's handled rights: every file right of ABI
// 6, TCP bind (never granted: no rule adds it) and TCP connect unless any
// port may be reached, and both scopes. Best effort unless require: on an
// older kernel go-landlock drops what the kernel lacks.
func landlockConfig(s Spec) (landlock.Config, error) {
	nets := landlock.AccessNetSet(llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP)
	if s.ConnectAny {
		nets = landlock.AccessNetSet(llsys.AccessNetBindTCP)
	}
	c, err := landlock.NewConfig(landlock.V6.HandledAccessFS, nets, landlock.V6.Scoped)
	if err != nil {
		return landlock.Config{}, fmt.Errorf("sandbox: %w", err)
	}
	if !s.Require {
		return c.BestEffort(), nil
	}
	return *c, nil
}

// rules turns a Spec into Landlock rules. A path that does not exist is
// left out (the system paths differ between distributions); a file gets
// the file rights, a directory the rights beneath it.
func rules(s Spec, workDir string) []landlock.Rule {
	var rs []landlock.Rule
	add := func(p string, write bool) {
		fi, err := os.Stat(p)
		if err != nil {
			return
		}
		switch {
		case fi.IsDir() && write:
			rs = append(rs, landlock.RWDirs(p).WithRefer())
		case fi.IsDir():
			rs = append(rs, landlock.RODirs(p))
		case fi.Mode()&fs.ModeDevice != 0 && write:
			rs = append(rs, landlock.RWFiles(p).WithIoctlDev())
		case write:
			rs = append(rs, landlock.RWFiles(p))
		default:
			rs = append(rs, landlock.ROFiles(p))
		}
	}
	for _, p := range s.Read {
		add(p, false)
	}
	for _, p := range s.Write {
		add(p, true)
	}
	if s.WorkDir && workDir != "" {
		add(workDir, true)
	}
	if !s.ConnectAny {
		for _, port := range s.Connect {
			rs = append(rs, landlock.ConnectTCP(port))
		}
	}
	return rs
}

// landlockRuleset creates the Landlock rule set of s, its paths opened
// now: its fd (-1 when nothing is restricted) and restrict_self's flags.
func landlockRuleset(s Spec) (int, uint32, error) {
	c, err := landlockConfig(s)
	if err != nil {
		return -1, 0, err
	}
	wd, err := os.Getwd()
	if err != nil && s.WorkDir {
		return -1, 0, fmt.Errorf("sandbox: the working directory: %w", err)
	}
	rs := rules(s, wd)
	if cgoPSX {
		// libpsx lists this directory right after restricting each
		// thread, and fails when it may not.
		rs = append(rs, landlock.PathAccess(llsys.AccessFSReadDir, pidTaskDir()))
	}
	fd, flags, err := c.NewRulesetFD(rs...)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return -1, 0, fmt.Errorf("sandbox: a path vanished while the rules were built: %w", err)
		}
		return -1, 0, fmt.Errorf("sandbox: landlock: %w", err)
	}
	return fd, flags, nil
}
