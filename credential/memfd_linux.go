package credential

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// FirstFileFD is the worker's fd of its first credential file: the one
// after stdin, stdout and stderr.
const FirstFileFD = 3

// OpenFiles turns s.Files into memory-backed files (memfd) of mode 0400,
// sealed against change, and the NAME=/proc/self/fd/N pairs that tell the
// worker where each is: its fds FirstFileFD, FirstFileFD+1… in order. The
// files exist in no directory: only the processes holding them can reach
// them, and they are gone when the worker (and anything it handed them
// to) has ended. The caller hands them to the worker's start, which
// closes them.
func (s Set) OpenFiles() ([]*os.File, []string, error) {
	files := make([]*os.File, 0, len(s.Files))
	env := make([]string, 0, len(s.Files))
	for i, f := range s.Files {
		fd, err := unix.MemfdCreate("mcpgate-credential", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			closeFiles(files)
			return nil, nil, fmt.Errorf("credential: memfd: %w", err)
		}
		file := os.NewFile(uintptr(fd), "credential")
		files = append(files, file)
		if _, err := file.Write(f.Value); err != nil {
			closeFiles(files)
			return nil, nil, fmt.Errorf("credential: memfd: %w", err)
		}
		if err := file.Chmod(0o400); err != nil {
			closeFiles(files)
			return nil, nil, fmt.Errorf("credential: memfd: %w", err)
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
			closeFiles(files)
			return nil, nil, fmt.Errorf("credential: memfd seal: %w", err)
		}
		env = append(env, f.Env+"=/proc/self/fd/"+strconv.Itoa(FirstFileFD+i))
	}
	return files, env, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
