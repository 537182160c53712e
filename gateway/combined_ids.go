package gateway

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// rewriteServerMessage makes a member's message fit the combined client: a
// request's id names its server, a resource update's uri is prefixed.
func rewriteServerMessage(server string, data []byte) []byte {
	m, err := jsonrpc.Decode(data)
	if err != nil {
		return data
	}
	if m.IsRequest() {
		m2 := *m
		m2.ID = mustMarshal(server + ":" + string(m.ID))
		if out, err := m2.Encode(); err == nil {
			return out
		}
		return data
	}
	return prefixNotification(server, data)
}

// idRewriter passes a member's answer to a combined session's client,
// rewriting the server's own requests on an event stream
// (rewriteServerMessage). A JSON answer passes as it is.
type idRewriter struct {
	http.ResponseWriter
	server string
	sse    *bool
	buf    []byte
}

func (w *idRewriter) Write(p []byte) (int, error) {
	if w.sse == nil {
		sse := strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
		w.sse = &sse
	}
	if !*w.sse {
		return w.ResponseWriter.Write(p)
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.Index(w.buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		ev := w.buf[:i+2]
		w.buf = w.buf[i+2:]
		if d, ok := bytes.CutPrefix(ev, []byte("event: message\ndata: ")); ok {
			ev = append(append([]byte("event: message\ndata: "), rewriteServerMessage(w.server, bytes.TrimSuffix(d, []byte("\n\n")))...), '\n', '\n')
		}
		if _, err := w.ResponseWriter.Write(ev); err != nil {
			return 0, err
		}
	}
	w.buf = bytes.Clone(w.buf)
	return len(p), nil
}

// Flush passes a flush on, for an event stream's events to go out.
func (w *idRewriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idRewriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
