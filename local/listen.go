package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/mcpgate/mcpgate/filelock"
)

// Listener is a Unix socket a daemon serves, with the lock beside it held
// for its life. Accept returns *Conn, which carries the peer's
// credentials.
type Listener struct {
	*net.UnixListener
	lock *filelock.Lock
	path string

	closeOnce sync.Once
	closeErr  error
}

// Listen serves the socket at path as the only daemon of it: it creates
// the directory if missing, refuses an unsafe one (CheckDir) or an unsafe
// file at path, takes the lock beside the socket (ErrRunning when another
// daemon holds it), replaces a stale socket (one nobody listens on: its
// daemon died without removing it) and listens, mode 0600 (0666 for a
// system socket). o.Owner is ignored: the socket is this process's.
func Listen(path string, o Options) (*Listener, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	o.Owner = os.Geteuid()
	if err := prepareDir(filepath.Dir(path), o); err != nil {
		return nil, err
	}
	// Not waiting: a held lock is a daemon that runs.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lock, err := filelock.Acquire(ctx, LockPath(path))
	if filelock.IsBusy(err) {
		return nil, fmt.Errorf("%w (%s); stop it first, or let clients use it", ErrRunning, path)
	}
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	ln, err := listenLocked(path, o)
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	return &Listener{UnixListener: ln, lock: lock, path: path}, nil
}

// listenLocked listens at path once the lock is held.
func listenLocked(path string, o Options) (*net.UnixListener, error) {
	exists, err := checkSocket(path, o)
	if err != nil {
		return nil, err
	}
	if exists {
		// The lock is ours, so no daemon serves it: a stale socket.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("local: removing the stale socket: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	mode := os.FileMode(0o600)
	if o.System {
		mode = 0o666
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("local: %w", err)
	}
	return ln, nil
}

// Path is the socket's absolute path.
func (l *Listener) Path() string { return l.path }

// Accept returns the next connection, a *Conn with its peer's
// credentials read.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.UnixListener.AcceptUnix()
	if err != nil {
		return nil, err
	}
	p, perr := peerOf(c)
	return &Conn{UnixConn: c, peer: p, peerErr: perr}, nil
}

// Close stops listening, removes the socket and releases the lock, so
// that another daemon may serve the path; connections accepted before
// stay open. Only the first call does anything.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = errors.Join(l.UnixListener.Close(), l.lock.Unlock())
	})
	return l.closeErr
}

// Conn is a connection accepted on a Listener.
type Conn struct {
	*net.UnixConn
	peer    Peer
	peerErr error
}

// RemoteAddr names the peer by its uid ("uid:1000"): a Unix socket's
// peer address is empty, and the listener's per-address limit (and the
// log) would otherwise count every local account as one.
func (c *Conn) RemoteAddr() net.Addr {
	name := "uid:unknown"
	if c.peerErr == nil {
		name = "uid:" + strconv.FormatUint(uint64(c.peer.UID), 10)
	}
	return &net.UnixAddr{Name: name, Net: "unix"}
}

// Peer returns the credentials the kernel gave for the connection's other
// end when it connected, or why there are none.
func (c *Conn) Peer() (Peer, error) { return c.peer, c.peerErr }

// Peer is the process at the other end of a connection, as the kernel saw
// it when it connected.
type Peer struct {
	UID, GID uint32
	PID      int32
}

// Dial connects to the socket at path after checking it and its directory
// as Listen does: owned by o.Owner (os.Geteuid() when 0 and not System),
// not a link, and in a directory no other account can write. A missing
// socket, or one nobody listens on, is ErrNotRunning.
func Dial(ctx context.Context, path string, o Options) (net.Conn, error) {
	if o.Owner == 0 && !o.System {
		o.Owner = os.Geteuid()
	}
	if o.System {
		o.Owner = -1
	}
	if err := CheckDir(filepath.Dir(path), o); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotRunning, path)
		}
		return nil, err
	}
	exists, err := checkSocket(path, o)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, path)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, path)
	}
	return c, err
}

// ErrNotRunning is Dial's error when no daemon serves the socket.
var ErrNotRunning = errors.New("local: no gateway serves the socket")
