// Package gateway is mcpgate's front end: the MCP Streamable HTTP transport
// at /mcp for protocol revision 2026-07-28 (no sessions) and for 2025-11-25,
// 2025-06-18 and 2025-03-26 (with JSON-RPC batches), chosen per request. It
// checks each request, keeps the session table and the per-user workers,
// asks its worker.Launcher for one worker process per session or per (user,
// read-only) key, and relays JSON-RPC between the client and that worker.
// It never runs a tool itself and forwards only
// the JSON-RPC body, never HTTP headers, so no token reaches a worker.
//
// # Answers
//
// Every refusal has a JSON-RPC error body (Content-Type application/json;
// id is the first request's id when the body could be read, else null).
// The golden transcripts in testdata/transport pin most rows; the 408
// (TestSlowBody408), the 409 (transport_test.go) and the listen limit
// (stateless_test.go) are tested outside them.
//
//	Any method   Host not loopback, with LoopbackHostCheck      403  -32600
//	             Origin present and not allowed                 403  -32600
//	             method other than POST, GET, DELETE            405  -32600, Allow: GET, POST, DELETE
//	             MCP-Protocol-Version unsupported (absent is    400  -32022, data {supported, requested}
//	             2025-03-26)
//	POST         Content-Type not application/json              415  -32600
//	             Accept has neither application/json nor        406  -32600
//	             text/event-stream (absent Accept: both)
//	             Content-Length over MaxBodyBytes (not read),   413  -32600
//	             or the body grows over it
//	             body not read within BodyReadTimeout           408  -32600
//	             not JSON                                       400  -32700
//	             not a JSON-RPC 2.0 message or batch; null id   400  -32600
//	             server/discover on an older revision           400  -32022, data {supported, requested}
//	             body _meta names a revision, header does not   400  -32020
//	             a batch on 2025-06-18 or later; empty batch    400  -32600
//	             initialize in a batch, or with a session id    400  -32600
//	             initialize over MaxSessions, or while draining 503  -32603, Retry-After
//	             initialize over MaxSessionsPerUser, none idle  429  -32603, Retry-After
//	             initialize over the principal's DB.MaxPerUser  429  -32603, Retry-After
//	             initialize over DB.Max                         503  -32603, Retry-After
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
// MCP-Protocol-Version: 2026-07-28 (stateless.go; testdata/transport/modern_*):
//
//	GET, DELETE  any                                            405  -32600, Allow: POST
//	POST         a batch                                        400  -32600
//	             a response                                     400  -32600
//	             a notification                                 202  dropped (closing a stream cancels)
//	             Mcp-Method missing or not the body's method    400  -32020
//	             _meta duplicate keys; protocolVersion or       400  -32602
//	             clientCapabilities missing
//	             _meta protocolVersion not the header's         400  -32020
//	             Mcp-Name missing or not params.name/uri        400  -32020 (=?base64?…?= decoded;
//	             (tools/call, prompts/get, resources/read)           an ambiguous params.name refused)
//	             Mcp-Param-* not matching an x-mcp-header       400  -32020 (required iff the argument
//	             argument of the tool (tools/call)                   is present and not null)
//	             initialize, ping, logging/setLevel,            404  -32601, no worker started
//	             resources/subscribe, resources/unsubscribe
//	             new per-user worker over MaxSessions, or while 503  -32603, Retry-After
//	             draining
//	             new per-user worker over MaxSessionsPerUser    429  -32603, Retry-After
//	             new per-user worker over DB.MaxPerUser         429  -32603, Retry-After
//	             new per-user worker over DB.Max                503  -32603, Retry-After
//	             worker cannot be started                       502  -32603
//	             no handshake answer in WorkerStartTimeout      504  -32603 (the worker is stopped)
//	             server/discover                                200  the worker's capabilities, the
//	                                                                 gateway's supportedVersions
//	             subscriptions/listen without SSE               406  -32600
//	             ... without a filter, or over 64 resources     400  -32602
//	             subscriptions/listen                           200  text/event-stream: the
//	                                                                 acknowledgement, then changes;
//	                                                                 the completion result when the
//	                                                                 worker or the gateway stops
//	             subscriptions/listen over 16 on one worker     429  -32603
//	             read-only caller, gated tool or method         404  -32601 data.kind "readOnly"
//	             a 2025 worker asks (sampling, elicitation,     200  resultType "input_required",
//	             roots) during tools/call, prompts/get or            inputRequests, requestState
//	             resources/read
//	             ... and the client did not declare that        400  -32021 data.requiredCapabilities
//	             capability
//	             any other request                              200  the worker's answer, JSON or SSE;
//	                                                                 a JSON error -32601 is 404,
//	                                                                 -32602/-32020/-32021/-32022 400
//
// A 2026-07-28 request carries no session: MCP-Session-Id is ignored. Every
// 2026-07-28 result gets resultType "complete" and _meta serverInfo when the
// worker left them out, and the cacheable ones (the four lists,
// resources/read, server/discover) cacheScope "private" and ttlMs (the
// worker's, else 0): the answer comes from the caller's own worker.
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
// A 2026-07-28 request runs in the per-user worker of its (principal, user
// id, read-only) key: started by the key's first request, shared by all of
// the key's requests (ids rewritten as in a session), stopped after
// SessionIdleTimeout without a request, and counted with sessions in
// MaxSessions and MaxSessionsPerUser. Its handshake: server/discover with
// 2026-07-28 _meta; a worker that answers it serves requests as they come,
// any other answer makes the gateway initialize it once on 2025-11-25 and
// translate (docs/gateway.md): results completed as above, per-request log
// levels, list changes for listeners, and the worker's sampling, elicitation
// and roots requests turned into input_required results whose requestState
// parks the worker's call until the client's retry answers (mrtr.go), or
// -32021 (HTTP 400) when the client did not declare the capability. A per-user worker that dies is removed first
// too; the key's next request starts a fresh one.
//
// When a worker dies, the session is removed first, then every request in
// flight gets -32603 with data.kind "workerExited" and the exit status, and
// the standalone stream ends. DELETE, idle reaping (SessionIdleTimeout with
// no HTTP request and no request in flight) and Close stop the worker: stdin
// closed, SIGTERM to its process group, SIGKILL after the launcher's
// StopGrace; the process is always reaped and its group killed.
//
// # Several servers
//
// A Combined serves one endpoint over several servers' Gateways (one per
// server, each at its own path): the servers a token reaches
// (auth.Rights), their tools and prompts as <server>__<name> and their
// resources as <server>+<uri>, lists merged, each other request handed to
// its server's Gateway past that Gateway's guard and token check, with
// the principal as that server sees it (combined*.go; docs/gateway.md,
// Several servers).
package gateway
