package config

import (
	"time"
)

// Limits bound everything a peer controls (docs/design.md, Limits).
type Limits struct {
	// MaxBodyBytes caps a request body; a larger one is answered 413
	// without being read. Default 8 MiB. YAML and environment accept a
	// plain number of bytes or a size such as 8MiB or 512KiB.
	MaxBodyBytes ByteSize `mapstructure:"max_body_bytes"`
	// MaxConnections caps live connections; the next one gets 503.
	// Default 4096; each open SSE stream holds one.
	MaxConnections int `mapstructure:"max_connections"`
	// MaxConnectionsPerPrincipal caps the connections counted against one
	// principal (issuer and subject): those on which its request was the
	// first to pass the token check. The request that would exceed it gets
	// 429 and its connection is closed. Below MaxConnections, so that one
	// token cannot hold every connection. Default MaxConnections / 4 (no
	// cap when that is 0).
	MaxConnectionsPerPrincipal int `mapstructure:"max_connections_per_principal"`
	// MaxStreamLifetime caps how long a standalone event stream (a 2025
	// session's GET stream, a 2026-07-28 subscriptions/listen) stays open;
	// it ends sooner when the token it was opened with expires, or, for an
	// introspected token, when its introspection answer is due again
	// (auth.introspection_max_cache_ttl). The client reopens it, with a
	// fresh token. Default 1h.
	MaxStreamLifetime time.Duration `mapstructure:"max_stream_lifetime"`
	// ReadHeaderTimeout bounds reading a request's head. Default 10s.
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	// ReadTimeout bounds reading a POST body, from when the gateway starts
	// reading it: an aggregate, so a peer dribbling bytes cannot hold a
	// request (408). The head is bounded by ReadHeaderTimeout. Default 30s.
	ReadTimeout time.Duration `mapstructure:"read_timeout"`
	// IdleTimeout bounds a kept-alive connection between requests.
	// Default 2m.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxSessions caps live worker processes: MCP sessions plus the
	// per-user workers of MCP 2026-07-28 clients; the next initialize, or a
	// 2026-07-28 request that needs a new worker, gets 503. Default 1024.
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxSessionsPerUser caps one user's (one principal's: issuer and
	// subject) live sessions and per-user workers; the next initialize, or
	// a 2026-07-28 request that needs a new worker, gets 429. Default 256.
	MaxSessionsPerUser int `mapstructure:"max_sessions_per_user"`
	// MaxSessionsPerWorker caps the sessions one worker hosts when
	// sessions are shared (worker.sessions); the next initialize of its
	// key gets 429. Default 128.
	MaxSessionsPerWorker int `mapstructure:"max_sessions_per_worker"`
	// MaxDBConnections caps the PostgreSQL connections this replica's
	// built-in workers may hold together: one per session, and
	// database.max_transactions+1 per 2026-07-28 per-user worker. The next
	// initialize, or a request that needs a new worker, gets 503. Size it
	// so that replicas × max_db_connections fits the server's
	// max_connections less its reserved ones. Default 64. Not used with
	// SQLite or an external worker.
	MaxDBConnections int `mapstructure:"max_db_connections"`
	// MaxDBConnectionsPerUser caps the same for one principal (issuer and
	// subject): the next initialize, or a request that needs a new worker,
	// gets 429. Default 10.
	MaxDBConnectionsPerUser int `mapstructure:"max_db_connections_per_user"`
	// SessionIdleTimeout is how long a session, or a per-user worker, may
	// go without a request before it is reaped and its worker stopped.
	// Default 30m.
	SessionIdleTimeout time.Duration `mapstructure:"session_idle_timeout"`
	// WorkerStartTimeout bounds a worker's start, up to its answer to
	// initialize. Default 10s.
	WorkerStartTimeout time.Duration `mapstructure:"worker_start_timeout"`
	// WorkerStopGrace is how long a stopping worker has between SIGTERM
	// and SIGKILL. Default 5s.
	WorkerStopGrace time.Duration `mapstructure:"worker_stop_grace"`
	// WriteTimeout bounds each write of a response (at most 64 KiB): a
	// client that accepts no bytes for this long loses the response, and
	// its request stops keeping the session busy. Default 30s.
	WriteTimeout time.Duration `mapstructure:"write_timeout"`
	// MaxStreamBufferBytes, MaxSessionBufferBytes and MaxUserBufferBytes
	// cap the bytes held, not yet written, for one response, one session's
	// responses and one user's. An answer beyond them is replaced by an
	// error of kind bufferFull. Defaults 32 MiB, 64 MiB, 128 MiB.
	MaxStreamBufferBytes  ByteSize `mapstructure:"max_stream_buffer_bytes"`
	MaxSessionBufferBytes ByteSize `mapstructure:"max_session_buffer_bytes"`
	MaxUserBufferBytes    ByteSize `mapstructure:"max_user_buffer_bytes"`
	// MaxUnauthenticatedPerAddress caps the connections from one client
	// address (IPv4, or IPv6 /64) that have not yet carried a request past
	// the token check; the next one is refused like one over
	// max_connections. Default 64.
	MaxUnauthenticatedPerAddress int `mapstructure:"max_unauthenticated_per_address"`
	// UnauthenticatedIdleTimeout bounds a connection's waits (TLS
	// handshake, request head, keep-alive idle) until a request on it has
	// passed the token check. Default 10s.
	UnauthenticatedIdleTimeout time.Duration `mapstructure:"unauthenticated_idle_timeout"`
	// DrainTimeout bounds the drain on SIGTERM: /readyz fails and new
	// sessions and per-user workers get 503 at once, and the calls in
	// flight have this long to finish before the workers are stopped. A
	// second SIGTERM cuts it short. Default 30s; keep the service
	// manager's stop timeout above it plus worker_stop_grace.
	DrainTimeout time.Duration `mapstructure:"drain_timeout"`
	// DrainMin is the shortest drain: the gateway keeps serving its
	// sessions and per-user workers this long after SIGTERM even with
	// nothing in flight, so that a load balancer's health check has seen
	// /readyz fail before it stops (HAProxy: inter × fall). At most
	// drain_timeout. Default 6s, deploy/haproxy's 2s × 3.
	DrainMin time.Duration `mapstructure:"drain_min"`
	// MaxWorkerMessageBytes caps one JSON-RPC message a worker writes. An
	// answer over it fails its own request (-32603, error.data.kind
	// "messageTooLarge") and the session goes on; any other message over
	// it is dropped and logged. Default 64 MiB, well above what the
	// built-in worker writes (16 MiB of structured content at most).
	MaxWorkerMessageBytes ByteSize `mapstructure:"max_worker_message_bytes"`
}
