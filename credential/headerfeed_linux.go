package credential

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// MaxHeaderFeedBytes bounds one message of a HeaderFeed: every header
// credential of one server, as "Name: value" lines.
const MaxHeaderFeedBytes = 128 << 10

// HeaderFeed hands a remote server's header credentials (Set.Header) to
// one user's upstream worker (mcpgate upstream --credential-fd), and
// hands it fresh ones ahead of their expiry without replacing it: the
// worker's end is a SOCK_SEQPACKET socket it inherits as a file, and each
// message is one whole header set, which the worker takes before each
// request it sends. Nothing is written to any file system, and no path
// leads to it: only the worker (and what it hands the fd to) can read it,
// whatever the sandbox lets it open.
type HeaderFeed struct {
	mu    sync.Mutex
	fd    int // the gateway's end; -1 once closed
	renew time.Time
}

// NewHeaderFeed opens a feed holding s's headers as its first message,
// and returns it and the worker's end, for the worker's start (which
// closes it in the gateway).
func NewHeaderFeed(s Set) (*HeaderFeed, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("credential: header feed: %w", err)
	}
	f := &HeaderFeed{fd: fds[0]}
	// The worker only reads; the gateway only writes.
	_ = unix.Shutdown(fds[0], unix.SHUT_RD)
	_ = unix.Shutdown(fds[1], unix.SHUT_WR)
	_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 2*MaxHeaderFeedBytes)
	worker := os.NewFile(uintptr(fds[1]), "credential-headers")
	if err := f.Send(s); err != nil {
		f.Close()
		worker.Close()
		return nil, nil, err
	}
	return f, worker, nil
}

// Send hands the worker s's headers, which replace the ones it holds from
// its next request on. It never waits: a worker that has not taken the
// earlier messages (the socket's buffer is full) fails it.
//
// A set with no header is refused: its message would be empty, which the
// worker cannot tell from the gateway's end closing, so it would go on
// sending the set it held.
func (f *HeaderFeed) Send(s Set) error {
	msg, err := headerLines(s.Header)
	if err != nil {
		return err
	}
	if msg == "" {
		return errors.New("credential: header feed: the set has no header")
	}
	if len(msg) > MaxHeaderFeedBytes {
		return fmt.Errorf("credential: header feed: the headers are over %d bytes", MaxHeaderFeedBytes)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return errors.New("credential: header feed: closed")
	}
	if err := unix.Sendmsg(f.fd, []byte(msg), nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL); err != nil {
		return fmt.Errorf("credential: header feed: %w", err)
	}
	f.renew = s.Renew
	return nil
}

// Renew is the renewal time of the set last sent (Set.Renew).
func (f *HeaderFeed) Renew() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renew
}

// Close closes the gateway's end; the worker keeps what it took last.
func (f *HeaderFeed) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}
