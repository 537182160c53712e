package worker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// TestReadLoopOverLimit: a line over MaxLineBytes must not end the read
// loop ("token too long") and with it the worker and its session. It is
// read through; the lines after it still arrive.
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

// TestAnswerOverLimit, at the gateway: an answer over the
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

// TestReadLoopLongLines: lines longer than the reader's buffer, read
// straight into blocks, arrive whole and exact, in order, with the short
// lines the same reads brought along; a long line over the limit is read
// through and the next one still arrives; the last line needs no newline.
func TestReadLoopLongLines(t *testing.T) {
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	lines := []string{long('a', 3<<20+7), "s1", "s2", long('b', 200<<10) + "\r", "s3", long('c', 5<<20), "s4", long('d', blockSize), long('e', 2<<20+1)}
	file := t.TempDir() + "/lines"
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600))
	p, err := StartProcess(ProcessConfig{Command: []string{"/bin/cat", file}, Env: []string{}, Logger: quiet, MaxLineBytes: 4 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(context.Background(), 0) })
	var got []string
	var tooLong []int
	require.NoError(t, p.ReadLoop(func(l, own []byte) {
		if own != nil && (len(own) > LineRoom+len(l)+2 || !strings.HasPrefix(string(own[LineRoom:]), string(l))) {
			t.Errorf("a line of %d bytes in a buffer of %d, not at its room's end", len(l), len(own))
		}
		got = append(got, string(l))
	}, func(_ []byte, n int) { tooLong = append(tooLong, n) }))
	want := []string{lines[0], "s1", "s2", strings.TrimSuffix(lines[3], "\r"), "s3", "s4", lines[7], lines[8]}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %d bytes %.20q…, want %d bytes %.20q…", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
	if len(tooLong) != 1 || tooLong[0] != 5<<20 {
		t.Errorf("got lines over the limit %v, want one of %d bytes", tooLong, 5<<20)
	}
}
