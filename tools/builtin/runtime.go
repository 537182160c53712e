package builtin

import (
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/workerproto"
)

// Environ is the environment the gateway gives every built-in worker
// before the operator's worker.env (which may override it): GOMAXPROCS=1.
// One session's calls rarely overlap, and each P costs an idle process
// memory (its allocation cache's spans, a GC worker) and a call on a worker
// idle for a while thread wakeups. Set at start it is 0.25–0.3 MiB less
// private memory per idle worker, and a call on a worker idle for 300 ms
// makes 14 voluntary context switches instead of 45 (6 with PollableStdin)
// and uses about 40 % less CPU; set later, with runtime.GOMAXPROCS, it
// saves no memory (measured on idle workers). A per-user
// worker raises it again (Run).
func Environ() []string { return []string{"GOMAXPROCS=" + sessionProcs} }

// sessionProcs is a session worker's GOMAXPROCS.
const sessionProcs = "1"

// perUserProcs returns the GOMAXPROCS a worker of the given scope should
// switch to, or 0 to keep its own: a per-user worker serves many sessions'
// calls at once, so it takes one P per core again when it runs with
// Environ's value.
func perUserProcs(scope, gomaxprocs string, ncpu int) int {
	if scope == workerproto.ScopeUser && gomaxprocs == sessionProcs && ncpu > 1 {
		return ncpu
	}
	return 0
}

// PollableStdin returns f ready for the runtime's network poller when it is
// a pipe, as the gateway's worker's stdin is, and f itself otherwise. A
// read of a blocking pipe parks a thread in read(2) and wakes the runtime's
// monitor on its return; through the poller, a call on an idle worker wakes
// one thread (6 voluntary context switches a call instead of 14 at
// GOMAXPROCS=1, measured). Only the worker reads its end of the
// pipe, so making it non-blocking changes nothing for another process. The
// returned file shares f's descriptor: the caller keeps both until it stops
// reading, and closes neither.
func PollableStdin(f *os.File) *os.File {
	if f.SetReadDeadline(time.Time{}) == nil {
		return f // already polled
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return f
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	var fd uintptr
	var nbErr error
	if err := rc.Control(func(d uintptr) { fd, nbErr = d, syscall.SetNonblock(int(d), true) }); err != nil || nbErr != nil {
		return f
	}
	// NewFile sees the non-blocking flag and registers the descriptor
	// with the poller.
	return os.NewFile(fd, f.Name())
}

// raiseProcs applies perUserProcs to a worker of scope (from its identity:
// a pre-started worker has no MCPGATE_WORKER_SCOPE variable).
func raiseProcs(scope string, getenv func(string) string) {
	if n := perUserProcs(scope, getenv("GOMAXPROCS"), runtime.NumCPU()); n > 0 {
		runtime.GOMAXPROCS(n)
	}
}
