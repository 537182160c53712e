package gateway

// The gateway's own exchange with a per-user worker as it starts: which
// revision the worker speaks (server/discover, else the 2025 initialize
// handshake held on the client's behalf) and the gateway's own requests.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// errRPC is a JSON-RPC error answer to one of the gateway's own requests.
type errRPC struct{ raw json.RawMessage }

func (e *errRPC) Error() string { return "gateway: the worker answered " + string(e.raw) }

// call sends the gateway's own request to uw's worker and waits for the
// answer's result, bounded by ctx.
func (uw *binding) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := jsonrpc.Marshal(params)
	if err != nil {
		return nil, err
	}
	m := &jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`"mcpgate"`), Method: method, Params: p}
	st := worker.NewStream(false)
	st.Expect(1)
	defer st.Detach()
	uw.conn.Call(m, "", st, nil)
	for {
		msgs, finished := st.Take(false)
		for _, o := range msgs {
			if !o.Response {
				continue
			}
			ans, err := jsonrpc.Decode(o.Data)
			if err != nil {
				return nil, err
			}
			if ans.Error != nil {
				return nil, &errRPC{ans.Error}
			}
			return ans.Result, nil
		}
		if finished {
			return nil, fmt.Errorf("gateway: %s: no answer", method)
		}
		select {
		case <-st.Ready():
		case <-ctx.Done():
			uw.conn.CancelStream(st)
			return nil, ctx.Err()
		}
	}
}

// gatewayMeta is the _meta of the gateway's own 2026-07-28 requests.
func (g *Gateway) gatewayMeta() map[string]any {
	return map[string]any{
		metaProtocolVersion:    modernVersion,
		metaClientCapabilities: map[string]any{},
		metaClientInfo:         gatewayClientInfo,
	}
}

// handshake learns which revision uw's worker speaks (MCP 2026-07-28 stdio
// §Backward Compatibility): server/discover first; a DiscoverResult that
// lists 2026-07-28 makes it a modern worker, which serves each request as
// it comes. Anything else makes it a 2025 worker: the gateway initializes it
// once, on 2025-11-25, and translates (translate.go).
func (g *Gateway) handshake(ctx context.Context, uw *binding) error {
	probe, cancel := context.WithTimeout(ctx, max(g.opts.WorkerStartTimeout/2, time.Second))
	res, err := uw.call(probe, "server/discover", map[string]any{"_meta": g.gatewayMeta()})
	cancel()
	if err == nil {
		var d struct {
			SupportedVersions []string       `json:"supportedVersions"`
			Meta              map[string]any `json:"_meta"`
		}
		if json.Unmarshal(res, &d) == nil && slices.Contains(d.SupportedVersions, modernVersion) {
			uw.modern = true
			uw.discover = res
			uw.serverInfo, _ = jsonrpc.Marshal(d.Meta[metaServerInfo])
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	uw.log.Info("gateway: the worker does not speak "+modernVersion+"; holding the 2025-11-25 handshake for it", "probe", errString(err), "client_capabilities", uw.key.caps)
	g.legacyWorkers.Store(true)
	res, err = uw.call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		// What the 2026-07-28 clients this worker serves declared (its
		// key's caps), and nothing more: the worker decides from these
		// what it may ask, and what it may run at all. The gateway turns
		// each question into an input request of the client whose call
		// it serves (mrtr.go).
		"capabilities": initializeCaps(uw.key.caps),
		"clientInfo":   gatewayClientInfo,
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions string          `json:"instructions,omitempty"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := uw.conn.Notify(&jsonrpc.Message{JSONRPC: "2.0", Method: "notifications/initialized"}); err != nil {
		return err
	}
	uw.serverInfo = init.ServerInfo
	d := map[string]any{"supportedVersions": supportedVersions, "capabilities": init.Capabilities}
	if init.Instructions != "" {
		d["instructions"] = init.Instructions
	}
	uw.discover, _ = jsonrpc.Marshal(d)
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
