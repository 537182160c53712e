//go:build !linux

package local

import (
	"errors"
	"net"
)

// errNoPeerCredentials: this system's peer credentials are not read.
var errNoPeerCredentials = errors.New("local: the Unix socket's peer credentials are read on Linux only; on this system use the gateway over TCP")

func peerOf(*net.UnixConn) (Peer, error) { return Peer{}, errNoPeerCredentials }
