package tools

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/workerproto"
)

// withHolder returns the Env of a call in a per-user worker, carrying the
// key the gateway says the request proved (params._meta
// workerproto.MetaHolder): the handles the call begins are bound to it,
// and a handle it names must have been begun under it. A session worker
// mints no handles and ignores it; so does a per-user worker for a call
// without one, which is the holder "" (a token bound to no key).
func (env *Env) withHolder(req *mcp.CallToolRequest) *Env {
	if env.txs == nil || req == nil || req.Params == nil {
		return env
	}
	holder, _ := req.Params.Meta[workerproto.MetaHolder].(string)
	if holder == env.holder {
		return env
	}
	c := *env
	c.holder = holder
	return &c
}
