package credential

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveBeneath keeps every open of a user's secret under the directory
// it starts from, through no symbolic link of any kind: a user id such
// as "../bob", or a link planted in a user's directory, fails to open
// rather than reach another file.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// readUserSecret reads <dir>/<user>/<name>. user must be one path element
// (checked), and the opens themselves cannot leave dir (openat2,
// resolveBeneath) whatever user holds. dir, the user's directory and the
// file must be owned by the gateway's account and closed to group and
// others; the file must be regular. A missing directory or file means the
// user has no access.
func readUserSecret(dir, user, name string) ([]byte, *fileError) {
	if user == "" || user == "." || user == ".." || strings.ContainsAny(user, "/\x00") {
		return nil, &fileError{ErrNoAccess, "the user id cannot name a directory of per-user secrets"}
	}
	top, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fileError{ErrUnavailable, fmt.Sprintf("the secrets directory cannot be opened: %v", err)}
	}
	defer unix.Close(top)
	if fe := checkPrivate(top, "the secrets directory", unix.S_IFDIR); fe != nil {
		return nil, fe
	}
	return readBeneath(top, user, name)
}

// readBeneath opens user then name under the directory top with
// resolveBeneath, checks both, and reads the file, bounded.
func readBeneath(top int, user, name string) ([]byte, *fileError) {
	ud, err := unix.Openat2(top, user, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveBeneath})
	if err != nil {
		return nil, openError(err, "the user's secrets directory")
	}
	defer unix.Close(ud)
	if fe := checkPrivate(ud, "the user's secrets directory", unix.S_IFDIR); fe != nil {
		return nil, fe
	}
	fd, err := unix.Openat2(ud, name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: resolveBeneath})
	if err != nil {
		return nil, openError(err, "the user's secret file")
	}
	return readPrivate(fd, "the user's secret file")
}

// readStatic reads the one secret file every user's worker gets, with the
// same checks of its owner and mode; the file itself must not be a
// symbolic link.
func readStatic(path string) ([]byte, *fileError) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		fe := openError(err, "the static secret file")
		if fe.kind == ErrNoAccess {
			fe.kind = ErrUnavailable // a missing shared file is the operator's problem, not the user's
		}
		return nil, fe
	}
	return readPrivate(fd, "the static secret file")
}

// readPrivate checks the open file fd, reads it (at most MaxSecretBytes)
// and closes it; one trailing newline is not part of the secret.
func readPrivate(fd int, what string) ([]byte, *fileError) {
	f := os.NewFile(uintptr(fd), what)
	defer f.Close()
	if fe := checkPrivate(fd, what, unix.S_IFREG); fe != nil {
		return nil, fe
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretBytes+1))
	switch {
	case err != nil:
		return nil, &fileError{ErrUnavailable, what + " cannot be read"}
	case len(b) > MaxSecretBytes:
		return nil, &fileError{ErrRefused, fmt.Sprintf("%s is over %d KiB", what, MaxSecretBytes>>10)}
	}
	// One final newline (an editor's, or echo's) is not part of it.
	if t, ok := bytes.CutSuffix(b, []byte("\n")); ok {
		b = bytes.TrimSuffix(t, []byte("\r"))
	}
	if len(b) == 0 {
		return nil, &fileError{ErrNoAccess, what + " is empty"}
	}
	return b, nil
}

// checkPrivate refuses fd unless it is of type typ (S_IFDIR, S_IFREG),
// owned by the gateway's effective user and closed to group and others.
func checkPrivate(fd int, what string, typ uint32) *fileError {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fileError{ErrUnavailable, what + " cannot be examined"}
	}
	return checkOwnerMode(what, st.Mode, st.Uid, typ)
}

// checkOwnerMode is the rule every secret file and directory is held to:
// of type typ, owned by the gateway's effective user, no access for group
// or others.
func checkOwnerMode(what string, mode, uid, typ uint32) *fileError {
	switch {
	case mode&unix.S_IFMT != typ && typ == unix.S_IFDIR:
		return &fileError{ErrRefused, what + " is not a directory"}
	case mode&unix.S_IFMT != typ:
		return &fileError{ErrRefused, what + " is not a regular file"}
	case uid != uint32(os.Geteuid()):
		return &fileError{ErrRefused, fmt.Sprintf("%s is owned by uid %d, not by the gateway's account (uid %d); chown it", what, uid, os.Geteuid())}
	case mode&0o077 != 0:
		return &fileError{ErrRefused, fmt.Sprintf("%s has mode %#o: group or others may use it; chmod go= it", what, mode&0o777)}
	}
	return nil
}

// openError says why an openat2 under the secrets directory failed.
func openError(err error, what string) *fileError {
	switch {
	case errors.Is(err, unix.ENOENT):
		return &fileError{ErrNoAccess, what + " does not exist: the user has no access to this server"}
	case errors.Is(err, unix.ELOOP):
		return &fileError{ErrRefused, what + " is a symbolic link, which per-user secrets may not be"}
	case errors.Is(err, unix.EXDEV):
		return &fileError{ErrRefused, what + " resolves outside the secrets directory"}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &fileError{ErrRefused, what + " cannot be opened by the gateway's account"}
	case errors.Is(err, unix.ENOTDIR):
		return &fileError{ErrRefused, what + " is not where a directory should be"}
	case errors.Is(err, unix.ENOSYS):
		return &fileError{ErrUnavailable, "this kernel has no openat2 (Linux 5.6 and later); per-user secrets need it"}
	}
	return &fileError{ErrUnavailable, what + " cannot be opened"}
}

// CheckDir is what doctor and the gateway's start check of a per-user
// secrets directory: it exists, is a directory owned by the gateway's
// account, and is closed to group and others.
func CheckDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("credential: %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if fe := checkPrivate(fd, "the secrets directory "+dir, unix.S_IFDIR); fe != nil {
		return errors.New("credential: " + fe.reason)
	}
	return nil
}

// CheckStatic checks a static secret file as Get would read it.
func CheckStatic(path string) error {
	if _, fe := readStatic(path); fe != nil {
		return fmt.Errorf("credential: %s: %s", path, fe.reason)
	}
	return nil
}
