package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/mcpgate/mcpgate/worker"
)

// servePOST handles one POST: a JSON-RPC message, or a batch on 2025-03-26
// (MCP 2025-11-25 §Sending Messages to the Server).
func (g *Gateway) servePOST(w http.ResponseWriter, r *http.Request) {
	if !isJSONContent(r) {
		errContentType.write(w, nil)
		return
	}
	jsonOK, sseOK := accepts(r)
	if !jsonOK && !sseOK {
		errAcceptPOST.write(w, nil)
		return
	}
	body, f, ok := g.readBody(w, r)
	if !ok {
		f.write(w, nil)
		return
	}
	msgs, batch, f, ok := parseBody(body)
	if !ok {
		f.write(w, nil)
		return
	}
	firstID := firstRequestID(msgs)

	// A 2026-07-28 client probes with server/discover and that version's
	// header; answer with that revision's refusal so it falls back to
	// initialize on 2025-11-25 (SEP-2575).
	version, supported := protocolVersion(r)
	if !supported || hasMethod(msgs, "server/discover") {
		if supported {
			version = "2026-07-28"
		}
		unsupportedVersion(version).write(w, firstID)
		return
	}
	if batch && version != "2025-03-26" {
		errBatchVersion.write(w, firstID)
		return
	}

	sid := r.Header.Get("MCP-Session-Id")
	if hasMethod(msgs, "initialize") {
		switch {
		case batch:
			errInitInBatch.write(w, firstID)
		case sid != "":
			errInitWithSession.write(w, firstID)
		case !msgs[0].IsRequest():
			errInvalid.write(w, nil)
		default:
			g.initialize(w, r, msgs[0], jsonOK, sseOK)
		}
		return
	}
	if sid == "" {
		errNoSession.write(w, firstID)
		return
	}
	s := g.lookup(r, sid)
	if s == nil {
		errUnknownSession.write(w, firstID)
		return
	}
	defer g.enter(s)()

	calls := 0
	for _, m := range msgs {
		if m.IsRequest() {
			calls++
		}
	}
	st := worker.NewStream(sseOK)
	st.Expect(calls)
	gone := false
	for _, m := range msgs {
		var err error
		switch {
		case m.IsRequest():
			g.forward(s, m, st)
		case m.IsNotification():
			err = s.conn.Notify(m)
		default:
			if err = s.conn.Respond(m); errors.Is(err, worker.ErrUnknownResponse) {
				s.log.Warn("gateway: dropped a client response to no pending worker request", "id", string(m.ID))
				err = nil
			}
		}
		if errors.Is(err, worker.ErrClosed) {
			gone = true
		}
	}
	if calls == 0 {
		if gone {
			// The worker has gone and nothing was written: say so as
			// the session being gone, which it is.
			errUnknownSession.write(w, nil)
			return
		}
		// MCP §Sending Messages: notifications and responses get 202.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	g.writeStream(w, r, st, jsonOK, batch)
}

// forward sends one client request to the session's worker, applying the
// read-only rules on the way (DESIGN decision 4).
func (g *Gateway) forward(s *session, m *worker.Message, st *worker.Stream) {
	name, token := worker.ParamsInfo(m.Params)
	var rewrite func(json.RawMessage) json.RawMessage
	if s.readOnly {
		switch m.Method {
		case "tools/call":
			if !g.safe[name] {
				s.log.Info("gateway: refused a tool in a read-only session", "tool", name)
				st.Push(readOnlyRefusal(m.ID, name), true)
				return
			}
		case "tools/list":
			rewrite = g.filterTools
		}
	}
	s.conn.Call(m, token, st, rewrite)
}

// readBody reads a POST body within MaxBodyBytes and BodyReadTimeout. A
// declared length over the limit is refused before reading anything.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, failure, bool) {
	limit := g.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, errTooLarge, false
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.opts.BodyReadTimeout))
	defer rc.SetReadDeadline(time.Time{})
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return nil, errTooLarge, false
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, errBodyTimeout, false
		}
		return nil, errBodyRead, false
	}
	return body, failure{}, true
}

// parseBody decodes one message or a batch.
func parseBody(body []byte) (msgs []*worker.Message, batch bool, f failure, ok bool) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, false, errParse, false
	}
	if len(body) > 0 && body[0] == '[' {
		var raws []json.RawMessage
		if json.Unmarshal(body, &raws) != nil {
			return nil, true, errInvalid, false
		}
		if len(raws) == 0 {
			return nil, true, errEmptyBatch, false
		}
		msgs = make([]*worker.Message, 0, len(raws))
		for _, raw := range raws {
			m, ok := decodeMessage(raw)
			if !ok {
				return nil, true, errInvalid, false
			}
			msgs = append(msgs, m)
		}
		return msgs, true, failure{}, true
	}
	m, ok := decodeMessage(body)
	if !ok {
		return nil, false, errInvalid, false
	}
	return []*worker.Message{m}, false, failure{}, true
}

func decodeMessage(raw []byte) (*worker.Message, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	m := new(worker.Message)
	if json.Unmarshal(raw, m) != nil || m.Validate() != nil {
		return nil, false
	}
	return m, true
}

func hasMethod(msgs []*worker.Message, method string) bool {
	for _, m := range msgs {
		if m.Method == method {
			return true
		}
	}
	return false
}

// firstRequestID returns the id of the first request, for error answers.
func firstRequestID(msgs []*worker.Message) json.RawMessage {
	for _, m := range msgs {
		if m.IsRequest() {
			return m.ID
		}
	}
	return nil
}
