// Package gateway is mcpgate's front end: the MCP Streamable HTTP transport
// at /mcp for protocol revisions 2025-11-25, 2025-06-18 and 2025-03-26 (with
// JSON-RPC batches). It checks each request, keeps the session table, asks
// its worker.Launcher for one worker process per session and relays JSON-RPC
// between the client and that worker. It never runs a tool itself and forwards only
// the JSON-RPC body, never HTTP headers, so no token reaches a worker.
//
// # Answers
//
// Every refusal has a JSON-RPC error body (Content-Type application/json;
// id is the first request's id when the body could be read, else null).
// The golden transcripts in testdata/transport pin each row.
//
//	Any method   Host not loopback, with LoopbackHostCheck      403  -32600
//	             Origin present and not allowed                 403  -32600
//	             method other than POST, GET, DELETE            405  -32600, Allow: GET, POST, DELETE
//	             MCP-Protocol-Version unsupported (absent is    400  -32022, data {supported, requested}
//	             2025-03-26), including 2026-07-28
//	POST         Content-Type not application/json              415  -32600
//	             Accept has neither application/json nor        406  -32600
//	             text/event-stream (absent Accept: both)
//	             Content-Length over MaxBodyBytes (not read),   413  -32600
//	             or the body grows over it
//	             body not read within BodyReadTimeout           408  -32600
//	             not JSON                                       400  -32700
//	             not a JSON-RPC 2.0 message or batch; null id   400  -32600
//	             server/discover (a 2026-07-28 client)          400  -32022, data {supported, requested}
//	             a batch on 2025-06-18 or later; empty batch    400  -32600
//	             initialize in a batch, or with a session id    400  -32600
//	             initialize over MaxSessions                    503  -32603, Retry-After
//	             initialize over MaxSessionsPerUser             429  -32603, Retry-After
//	             initialize: worker cannot be started           502  -32603
//	             initialize: worker exits before answering      502  -32603
//	             initialize: no answer in WorkerStartTimeout    504  -32603 (the worker is stopped)
//	             initialize answered with an error              200  the worker's error, no session
//	             initialize answered                            200  the answer, MCP-Session-Id
//	             no MCP-Session-Id                              400  -32600
//	             unknown or ended session, or another owner's   404  -32001
//	             only notifications and responses               202  no body
//	             requests                                       200  application/json, or
//	                                                                 text/event-stream (below)
//	GET          Accept without text/event-stream               406  -32600
//	             no session id / unknown session                400 / 404
//	             Last-Event-ID (no event ids are sent)          400  -32600
//	             a second standalone stream (as the go-sdk)     409  -32600
//	             otherwise                                      200  text/event-stream, ": ok" first
//	DELETE       no session id / unknown session                400 / 404
//	             live session                                   200  the worker is stopped first
//
// A request's answer is application/json while only answers arrive and the
// client accepts JSON (a batch: an array, in request order). The first
// message that is not an answer (progress, logging, a sampling or
// elicitation request), or a client that accepts only text/event-stream,
// turns the response into an SSE stream that ends with the last answer.
// Keep-alive comments go out every KeepAliveInterval on every SSE stream.
//
// # Routing
//
// The gateway replaces each client request id with its own number, unique
// per worker, and restores it on the answer; requests the worker sends the
// client get gateway ids too, so the client's answers go back to the worker
// with the worker's own ids. notifications/cancelled is rewritten the same
// way and settles the cancelled request without an answer. A client that
// disconnects does not cancel its request. A message of the worker's own goes
// to exactly one stream: the stream of the request whose progress token it
// carries; else the stream of the only request in flight; else the
// standalone GET stream; else the oldest request's stream (a stream only if
// it can carry SSE and its client is still there).
//
// # Sessions and workers
//
// A session id is 128 bits from crypto/rand, hex. A session belongs to the
// verified principal that opened it: its issuer, subject, user id and client
// (auth.Owner; nobody in localhost mode); any other caller gets the
// unknown-session 404, and a log line naming what differed. A session is
// read-only when Options.ReadOnly is set or the principal is read-only, and
// a request is read-only when its own principal is; then tools/list shows
// only Options.SafeTools, tools/call of any other tool gets -32601 with
// error.data.kind "readOnly", and so does any method that is neither one of
// MCP's reads (ReadMethods) nor in Options.SafeMethods. A read-only request
// on a read-write session may not undo that session's work: Options.UndoTools
// are refused to it, its DELETE gets 403 insufficient_scope
// (auth.WriteScopeRequired), and its cancellations are dropped.
//
// When a worker dies, the session is removed first, then every request in
// flight gets -32603 with data.kind "workerExited" and the exit status, and
// the standalone stream ends. DELETE, idle reaping (SessionIdleTimeout with
// no HTTP request and no request in flight) and Close stop the worker: stdin
// closed, SIGTERM to its process group, SIGKILL after the launcher's
// StopGrace; the process is always reaped and its group killed.
package gateway
