package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// TestReadLoopOverLimit: a line over MaxLineBytes used to end the read loop
// ("token too long") and with it the worker and its session. It is read
// through; the lines after it still arrive.
func TestReadLoopOverLimit(t *testing.T) {
	p, err := StartProcess(ProcessConfig{
		Command:      []string{"/bin/sh", "-c", `echo first; head -c 5000 /dev/zero | tr '\0' x; echo; echo last`},
		Env:          []string{"PATH=/usr/bin:/bin"},
		Logger:       quiet,
		MaxLineBytes: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background(), 0) })
	var lines []string
	var head string
	n := 0
	if err := p.ReadLoop(func(l, _ []byte) { lines = append(lines, string(l)) }, func(h []byte, size int) { head, n = string(h), size }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(lines, ",") != "first,last" {
		t.Errorf("got lines %q, want first and last", lines)
	}
	if n != 5000 || len(head) != headBytes || strings.Trim(head, "x") != "" {
		t.Errorf("got a long line of %d bytes with a %d-byte head, want 5000 and %d", n, len(head), headBytes)
	}
}

// TestAnswerOverLimit is issue 8 item 10 at the gateway: an answer over the
// limit fails its own request with messageTooLarge, and the next request on
// the same worker is answered.
func TestAnswerOverLimit(t *testing.T) {
	script := `read a; printf '{"jsonrpc":"2.0","id":1,"result":{"text":"%s"}}\n' "$(head -c 5000 /dev/zero | tr '\0' x)"
read b; echo '{"jsonrpc":"2.0","id":2,"result":{}}'
read c`
	p, err := StartProcess(ProcessConfig{Command: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Logger: quiet, MaxLineBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(p, ConnConfig{Logger: quiet})
	t.Cleanup(func() { _ = c.Close(context.Background(), KindSessionEnded, "test over") })
	ask := func(id string) map[string]any {
		t.Helper()
		m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		s := NewStream(false)
		s.Expect(1)
		c.Call(m, "", s, nil)
		for {
			<-s.Ready()
			msgs, _ := s.Take(false)
			if len(msgs) == 0 {
				continue
			}
			var got map[string]any
			if err := json.Unmarshal(msgs[0].Data, &got); err != nil {
				t.Fatal(err)
			}
			return got
		}
	}
	got := ask("big")
	e, _ := got["error"].(map[string]any)
	if got["id"] != "big" || e == nil || e["data"].(map[string]any)["kind"] != KindTooLarge {
		t.Fatalf("got %v, want a messageTooLarge error for id big", got)
	}
	if msg := e["message"].(string); !strings.Contains(msg, "5045 bytes") || !strings.Contains(msg, "limits.max_worker_message_bytes") {
		t.Errorf("got message %q, want the size and the config key", msg)
	}
	if got := ask("next"); got["id"] != "next" || got["result"] == nil {
		t.Errorf("got %v, want the next request answered", got)
	}
}
