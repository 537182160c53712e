package bridge

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/mcpgate/mcpgate/credential"
)

// ErrCredentialFeed is wrapped by every error of CredentialFeed.
var ErrCredentialFeed = errors.New("bridge: credential headers")

// CredentialFeed is the user's own header credentials the gateway hands
// an upstream worker on an inherited socket (credential.HeaderFeed): each
// message a whole set of `Name: value` lines, the last one received
// replacing the ones before. Header takes every message waiting before it
// answers, so a set the gateway sent before it forwarded a request is the
// one that request carries. Errors never hold a value.
type CredentialFeed struct {
	fd int

	mu  sync.Mutex
	h   http.Header
	got bool
	buf []byte
}

// NewCredentialFeed reads the feed on fd, which must be a SOCK_SEQPACKET
// socket.
func NewCredentialFeed(fd int) (*CredentialFeed, error) {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || typ != unix.SOCK_SEQPACKET {
		return nil, fmt.Errorf("%w: fd %d is not the gateway's credential socket", ErrCredentialFeed, fd)
	}
	unix.CloseOnExec(fd)
	return &CredentialFeed{fd: fd, buf: make([]byte, credential.MaxHeaderFeedBytes+1)}, nil
}

// Header returns the last set the gateway sent, taking any waiting first;
// an error until one came, or when the last one was not a valid set.
func (c *CredentialFeed) Header() (http.Header, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		n, _, flags, _, err := unix.Recvmsg(c.fd, c.buf, nil, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 { // nothing waiting (EAGAIN), or the gateway's end closed
			break
		}
		if n > credential.MaxHeaderFeedBytes || flags&unix.MSG_TRUNC != 0 {
			c.h, c.got = nil, true
			continue
		}
		h, perr := ParseHeaders(c.buf[:n])
		if perr != nil {
			h = nil
		}
		c.h, c.got = h, true
	}
	switch {
	case !c.got:
		return nil, fmt.Errorf("%w: none received from the gateway", ErrCredentialFeed)
	case c.h == nil:
		return nil, fmt.Errorf("%w: the gateway's last set was not valid headers", ErrCredentialFeed)
	}
	return c.h, nil
}
