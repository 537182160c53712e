// Package worker is the gateway's side of a worker process: it starts one OS
// process per MCP session with the user's identity, frames JSON-RPC over the
// process's stdin and stdout, matches answers to requests, routes the worker's
// own messages, notices a crash and stops the process. The identity and the
// rest of the contract with the worker are package workerproto's.
package worker
