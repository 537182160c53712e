package worker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Cgroup is a cgroup v2 directory delegated to the gateway (systemd
// Delegate=), divided into one leaf per worker: memory.max, cpu.max and
// pids.max of Limits are set on the leaf before the worker is born in it.
type Cgroup struct {
	dir  string
	next atomic.Uint64
}

// ErrNotDelegated says the gateway has no cgroup of its own to divide; the
// cgroup limits are then skipped (the rlimits still apply).
var ErrNotDelegated = errors.New("worker: no delegated cgroup v2")

// cgroupControllers are the controllers a leaf needs.
var cgroupControllers = []string{"memory", "cpu", "pids"}

// DelegatedCgroup finds the gateway's own cgroup v2 (/proc/self/cgroup
// under the cgroup2 mount of /proc/self/mountinfo) and prepares it for
// worker leaves: the gateway's processes move to a "gateway" leaf (cgroup
// v2 lets only a cgroup without processes give controllers to children)
// and the memory, cpu and pids controllers are enabled for children. It
// returns an error wrapping ErrNotDelegated, saying why, when the cgroup
// is the root, is not cgroup v2, lacks a controller or is not writable
// (not delegated); nothing is changed then.
func DelegatedCgroup() (*Cgroup, error) {
	dir, err := ownCgroupDir("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return prepareCgroup(dir)
}

// ownCgroupDir returns the directory of this process's cgroup v2.
func ownCgroupDir(mountinfo, cgroupFile string) (string, error) {
	b, err := os.ReadFile(cgroupFile)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotDelegated, err)
	}
	rel := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	if rel == "" || rel == "/" {
		return "", fmt.Errorf("%w: the gateway runs in the root cgroup (or cgroup v1 only); run it under a unit with Delegate=", ErrNotDelegated)
	}
	mi, err := os.Open(mountinfo)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotDelegated, err)
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f[3] != "/" { // a mount of a sub-tree (a cgroup namespace)
			r := strings.TrimSuffix(f[3], "/")
			if rel != r && !strings.HasPrefix(rel, r+"/") {
				continue
			}
			rel = strings.TrimPrefix(rel, r)
		}
		return filepath.Join(f[4], rel), nil
	}
	return "", fmt.Errorf("%w: no cgroup2 file system is mounted", ErrNotDelegated)
}

// prepareCgroup checks and prepares dir (see DelegatedCgroup).
func prepareCgroup(dir string) (*Cgroup, error) {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotDelegated, err)
	}
	have := strings.Fields(string(ctrl))
	for _, c := range cgroupControllers {
		if !contains(have, c) {
			return nil, fmt.Errorf("%w: controller %s is not available in %s (Delegate=memory cpu pids)", ErrNotDelegated, c, dir)
		}
	}
	if err := syscall.Access(filepath.Join(dir, "cgroup.subtree_control"), 2 /* W_OK */); err != nil {
		return nil, fmt.Errorf("%w: %s is not writable: %v", ErrNotDelegated, dir, err)
	}
	// Move every process of dir (the gateway; under systemd it is alone)
	// into a leaf of its own, then give the controllers to the children.
	self := filepath.Join(dir, "gateway")
	if err := os.Mkdir(self, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("worker: cgroup: %w", err)
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("worker: cgroup: %w", err)
	}
	for _, pid := range strings.Fields(string(procs)) {
		if err := os.WriteFile(filepath.Join(self, "cgroup.procs"), []byte(pid), 0); err != nil {
			return nil, fmt.Errorf("worker: cgroup: moving pid %s to %s: %w", pid, self, err)
		}
	}
	enable := "+" + strings.Join(cgroupControllers, " +")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		return nil, fmt.Errorf("worker: cgroup: enabling %s in %s: %w", enable, dir, err)
	}
	return &Cgroup{dir: dir}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Dir returns the delegated cgroup's directory.
func (c *Cgroup) Dir() string { return c.dir }

// leaf is one worker's cgroup.
type leaf struct {
	dir string
	fd  int // open directory, for SysProcAttr.CgroupFD; -1 once closed
}

// newLeaf makes a leaf for one worker with l's cgroup controls written.
func (c *Cgroup) newLeaf(l Limits) (*leaf, error) {
	dir := filepath.Join(c.dir, "w-"+strconv.FormatUint(c.next.Add(1), 10)+"-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: cgroup leaf: %w", err)
	}
	lf := &leaf{dir: dir, fd: -1}
	var files [][2]string
	if l.Memory > 0 {
		m := strconv.FormatInt(l.Memory, 10)
		files = append(files, [2]string{"memory.max", m}, [2]string{"memory.swap.max", "0"})
	}
	if l.CPU > 0 {
		const period = 100000 // µs, the kernel's default
		files = append(files, [2]string{"cpu.max", strconv.Itoa(max(1000, int(l.CPU*period))) + " " + strconv.Itoa(period)})
	}
	if l.Processes > 0 {
		files = append(files, [2]string{"pids.max", strconv.Itoa(l.Processes)})
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0); err != nil {
			lf.remove()
			return nil, fmt.Errorf("worker: cgroup leaf: %s: %w", f[0], err)
		}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		lf.remove()
		return nil, fmt.Errorf("worker: cgroup leaf: %w", err)
	}
	lf.fd = fd
	return lf, nil
}

// closeFD closes the directory once the child has been born in it.
func (lf *leaf) closeFD() {
	if lf.fd >= 0 {
		syscall.Close(lf.fd)
		lf.fd = -1
	}
}

// remove deletes the leaf; the worker and its children must be gone.
func (lf *leaf) remove() {
	lf.closeFD()
	_ = os.Remove(lf.dir)
}

// oomKilled reports whether the kernel killed a process of the leaf for
// memory.max (memory.events oom_kill).
func (lf *leaf) oomKilled() bool {
	return eventCount(filepath.Join(lf.dir, "memory.events"), "oom_kill") > 0
}

// pidsMaxHit reports whether a fork or thread creation was refused for
// pids.max (pids.events max).
func (lf *leaf) pidsMaxHit() bool { return eventCount(filepath.Join(lf.dir, "pids.events"), "max") > 0 }

// eventCount reads one "name count" line of a cgroup events file.
func eventCount(path, name string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == name {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
