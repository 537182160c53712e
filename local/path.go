package local

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// SocketName is the socket's file name in its default directory.
const SocketName = "mcpgate.sock"

// DefaultPath is the per-user socket: $XDG_RUNTIME_DIR/mcpgate/mcpgate.sock
// (a directory the system gives each logged-in user, private and emptied
// at logout), else ~/.local/state/mcpgate/mcpgate.sock.
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpgate", SocketName), nil
	}
	dir, err := StateDir(getenv)
	if err != nil {
		return "", errors.New("local: neither XDG_RUNTIME_DIR nor HOME is set, so there is no default socket path; give one (unix:/path/to/mcpgate.sock)")
	}
	return filepath.Join(dir, SocketName), nil
}

// StateDir is where the local mode keeps what outlives a login (the
// default SQLite file): $XDG_STATE_HOME/mcpgate, else
// ~/.local/state/mcpgate.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpgate"), nil
	}
	home := getenv("HOME")
	if home == "" {
		u, err := user.Current()
		if err != nil || u.HomeDir == "" {
			return "", errors.New("local: neither XDG_STATE_HOME nor HOME is set")
		}
		home = u.HomeDir
	}
	return filepath.Join(home, ".local", "state", "mcpgate"), nil
}

// LockPath is the lock file the daemon of the socket at path holds for its
// life, beside the socket.
func LockPath(path string) string { return path + ".lock" }

// LogPath is the file a detached daemon of the socket at path logs to,
// beside the socket: mcpgate.sock logs to mcpgate.log.
func LogPath(path string) string {
	if strings.HasSuffix(path, ".sock") {
		return strings.TrimSuffix(path, ".sock") + ".log"
	}
	return path + ".log"
}

// PathError is a socket path refused as unsafe: Path is the file or
// directory at fault, Problem what is wrong with it, Fix what to do.
type PathError struct {
	Path, Problem, Fix string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("local: %s %s; %s", e.Path, e.Problem, e.Fix)
}

// ErrRunning is Listen's error when a daemon of the socket is running
// already (it holds the lock beside the socket).
var ErrRunning = errors.New("local: a gateway already serves this socket")

// Options say whose a socket is and who else may reach it.
type Options struct {
	// System marks a system socket (server.unix_allowed_users opens it to
	// other accounts): created 0666, its directory 0755 when missing, so
	// that other accounts can connect at all; the peer's identity decides
	// who is served. Its directory must still be writable by its owner
	// only. A per-user socket is 0600 in a 0700 directory.
	System bool
	// Owner is the uid that must own the socket and its directory; -1
	// (what Dial's callers pass for a system socket) accepts any owner
	// that is root or owns the directory. Listen always uses its own.
	Owner int
}

// CheckDir refuses a socket directory that another account could use to
// put a socket of its own in place: not a directory, a symbolic link,
// owned by another account than o.Owner, or writable by group or others.
// Its parents must not let another account rename it away: each is owned
// by root or o.Owner, and writable by others only with the sticky bit (as
// /tmp is); a parent that is a symbolic link is held to this itself, and
// so is every directory the link leads through.
func CheckDir(dir string, o Options) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return &PathError{dir, "is a symbolic link", "give the real directory's path, or remove the link and let mcpgate create the directory"}
	}
	if !fi.IsDir() {
		return &PathError{dir, "is not a directory", "remove it, or choose another socket path"}
	}
	uid, ok := ownerOf(fi)
	if !ok {
		return &PathError{dir, "has no owner this system reports", "local mode needs Linux"}
	}
	if o.Owner >= 0 && uid != o.Owner {
		return &PathError{dir, fmt.Sprintf("belongs to another account (uid %d), which could answer or read every message", uid), "use a directory of your own (the default is under $XDG_RUNTIME_DIR), or remove it as its owner or root"}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return &PathError{dir, fmt.Sprintf("is writable by group or others (mode %04o), so another account could replace the socket", fi.Mode().Perm()), "chmod go-w " + dir + ", or choose a private directory"}
	}
	if err := checkParents(dir, uid); err != nil {
		return err
	}
	// Through a link among the parents, the directories the path leads
	// to must pass too: a link's owner decides where it points, but the
	// directories behind it decide what may be renamed there.
	parent := filepath.Dir(dir)
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return err
	}
	if real != parent {
		return checkParents(filepath.Join(real, filepath.Base(dir)), uid)
	}
	return nil
}

// checkParents refuses a parent of dir that an account other than root
// and uid could change: owned by it (a symbolic link too, read without
// following it: its owner can point it elsewhere at any moment), or a
// directory writable by others without the sticky bit.
func checkParents(dir string, uid int) error {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		pi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		puid, _ := ownerOf(pi)
		if puid != 0 && puid != uid {
			return &PathError{p, fmt.Sprintf("belongs to another account (uid %d), which could move the socket's directory", puid), "put the socket in a directory whose parents are yours or root's"}
		}
		if pi.Mode()&os.ModeSymlink == 0 && pi.Mode().Perm()&0o022 != 0 && pi.Mode()&os.ModeSticky == 0 {
			return &PathError{p, fmt.Sprintf("is writable by group or others without the sticky bit (mode %04o), so another account could move the socket's directory", pi.Mode().Perm()), "chmod go-w " + p + ", or choose another directory"}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// checkSocket refuses what is at path unless it is a socket (not a link)
// owned by o.Owner; a missing one is fine.
func checkSocket(path string, o Options) (exists bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return true, &PathError{path, "is a symbolic link, which could lead to another account's socket", "remove the link; give the socket's real path"}
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return true, &PathError{path, "is not a socket", "remove it, or choose another socket path"}
	}
	uid, _ := ownerOf(fi)
	if o.Owner >= 0 && uid != o.Owner {
		return true, &PathError{path, fmt.Sprintf("belongs to another account (uid %d), which would answer every message", uid), "remove it as its owner or root, or choose a socket path of your own"}
	}
	return true, nil
}

// Prepare creates the socket's directory dir if missing and checks it,
// as Listen does.
func Prepare(dir string, o Options) error {
	o.Owner = os.Geteuid()
	return prepareDir(dir, o)
}

// prepareDir creates the socket's directory if missing (0700, or 0755 for
// a system socket) and checks it.
func prepareDir(dir string, o Options) error {
	mode := os.FileMode(0o700)
	if o.System {
		mode = 0o755
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, mode); err != nil {
			return fmt.Errorf("local: creating the socket's directory: %w", err)
		}
		// MkdirAll's mode passes through the umask; set it exactly.
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("local: %w", err)
		}
	}
	return CheckDir(dir, o)
}
