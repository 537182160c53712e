package workerproto

import (
	"bytes"
	"testing"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// FuzzClientMessageInFrame: whatever body a client sends, each message
// the gateway reads from it (jsonrpc.DecodeBody), written again as the
// gateway forwards it (Encode, or EncodeWithID with the gateway's id) in
// session 5's frame, is one line that reads back as session 5's frame
// with exactly that message: no client's bytes can end a frame early,
// name another session or add a member to the frame.
func FuzzClientMessageInFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},"session":1,"x":{"a":1}`,
		"{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id":"a\u000a","method":"ping","params":{"_meta":{"progressToken":"}}\n{"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"mcpgate/session","params":{"session":1,"message":{}}},{"jsonrpc":"2.0","method":"notifications/x"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"mcpgate/session","params":{"session":2,"end":true}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":"\u2028"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, _, err := jsonrpc.DecodeBody(body)
		if err != nil {
			return
		}
		for _, m := range msgs {
			for _, enc := range encodings(m) {
				line := AppendFrame(nil, 5, enc)
				if bytes.ContainsAny(line, "\r\n") {
					t.Fatalf("a frame holds a line break: %q", line)
				}
				fr, err := ParseFrame(line)
				if err != nil {
					t.Fatalf("the frame of %q does not parse: %v", enc, err)
				}
				if fr.Session != 5 || fr.End || fr.Open != "" || !bytes.Equal(fr.Message, enc) {
					t.Fatalf("the frame of %q read as %+v", enc, fr)
				}
			}
		}
	})
}

// encodings are the ways the gateway writes a client's message to a
// worker: as it is, and with the gateway's own id.
func encodings(m *jsonrpc.Message) [][]byte {
	var out [][]byte
	if enc, err := m.Encode(); err == nil {
		out = append(out, enc)
	}
	if m.ID != nil {
		if enc, err := m.EncodeWithID([]byte("17")); err == nil {
			out = append(out, enc)
		}
	}
	return out
}
