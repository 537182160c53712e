// Package local is mcpgate's local mode: the gateway on a Unix socket that
// one machine user's MCP clients (or a few accounts' on a shared machine)
// reach through a stdio shim. It owns the socket's path and its safety
// (who owns the directory and the socket, a stale socket, a daemon already
// running), and the identity of a peer, which the kernel gives
// (SO_PEERCRED) in place of a bearer token, and the two kinds of
// connection one socket takes: HTTP, and the shim's stdio connection,
// told apart by its first byte (SplitListener, DialStdio).
//
// Peer credentials are read on Linux only; elsewhere Listen works but every
// connection is refused with a message that says so.
package local

import "time"

// DefaultIdleExit is how long a daemon runs with no client and no worker
// before it exits (server.idle_exit).
const DefaultIdleExit = 5 * time.Minute
