package workerproto

// MetaRequest is the params._meta key by which a worker ties a request or
// notification it sends during a client request to that request: its
// value is the request's JSON-RPC id as the worker received it. The
// built-in worker adds it to everything it sends during a call; the gateway
// routes by it and removes it before the message reaches a client.
const MetaRequest = "io.mcpgate/requestId"

// MetaHolder is the params._meta key by which the gateway tells a per-user
// worker which key the request proved, on every tools/call it forwards
// there: "jkt:" and the RFC 7638 thumbprint of a DPoP key (RFC 9449),
// "x5t:" and the thumbprint of a client certificate (RFC 8705), both
// (space-separated), or "" for a token bound to neither. A worker that
// mints handles binds each to the holder that began it and answers a call
// of another holder as if the handle did not exist, as the gateway does
// for a session: a token of the same user bound to another key, or to
// none, does not reach it. The gateway replaces whatever a client put
// under this key.
const MetaHolder = "io.mcpgate/holder"
