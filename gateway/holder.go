package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/workerproto"
)

// errHolderParams refuses a tools/call whose params name a holder the
// gateway could not replace.
var errHolderParams = failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: params._meta." + workerproto.MetaHolder + " is the gateway's to set", nil}

// holderOf is the workerproto.MetaHolder value of a request of owner o:
// the DPoP key and the client certificate its token is bound to, which the
// request proved; "" for a token bound to neither (or no token).
func holderOf(o auth.Owner) string {
	var parts []string
	if o.KeyThumbprint != "" {
		parts = append(parts, "jkt:"+o.KeyThumbprint)
	}
	if o.CertThumbprint != "" {
		parts = append(parts, "x5t:"+o.CertThumbprint)
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return parts[0] + " " + parts[1]
}

// mayHold reports whether params may spell the key MetaHolder: literally,
// or with a JSON escape anywhere (io.mcpgate\/holder is the same key to
// every decoder).
func mayHold(params []byte) bool {
	return bytes.Contains(params, []byte(workerproto.MetaHolder)) || bytes.IndexByte(params, '\\') >= 0
}

// withHolder returns tools/call m, bound for a per-user worker, with
// params._meta[workerproto.MetaHolder] set to holder: a per-user worker
// binds the transaction handles a call begins to the key the request
// proved, since its key (the user's) leaves the DPoP key and the client
// certificate out. A client's own value is replaced, or removed for the
// holder "", so that no client can claim another key. A message whose
// params cannot be rewritten is returned as it is when it holds no such
// value (the worker then sees no holder, which is the holder ""), and
// reported not ok when it does.
func withHolder(m *jsonrpc.Message, holder string) (*jsonrpc.Message, bool) {
	if holder == "" && !mayHold(m.Params) {
		return m, true // the common case, without decoding
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params == nil {
		return m, !mayHold(m.Params)
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return m, false
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if holder == "" {
		delete(meta, workerproto.MetaHolder)
	} else {
		meta[workerproto.MetaHolder], _ = jsonrpc.Marshal(holder)
	}
	var err error
	if len(meta) == 0 {
		delete(params, "_meta")
	} else if params["_meta"], err = jsonrpc.Marshal(meta); err != nil {
		return m, false
	}
	p, err := jsonrpc.Marshal(params)
	if err != nil {
		return m, false
	}
	return m.WithParams(p), true
}
