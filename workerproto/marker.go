package workerproto

// MetaRequest is the params._meta key by which a worker ties a request or
// notification it sends during a client request to that request: its
// value is the request's JSON-RPC id as the worker received it. The
// built-in worker adds it to everything it sends during a call; the gateway
// routes by it and removes it before the message reaches a client.
const MetaRequest = "io.mcpgate/requestId"
