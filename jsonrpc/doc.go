// Package jsonrpc is the JSON-RPC 2.0 wire vocabulary mcpgate's gateway, its
// worker connections and its built-in worker share: the message type and its
// validation, decoding (a scan of the top level for the common message, with
// encoding/json for everything else) and encoding, a validator equal to
// json.Valid, and the one table of error codes with the builder of error
// responses. It knows nothing of MCP: readers of MCP parameters live with the
// code that uses them.
package jsonrpc
