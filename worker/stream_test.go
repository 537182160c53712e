package worker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingBudget is a Budget with a limit, for the stream's own tests.
type countingBudget struct{ used, limit int }

func (b *countingBudget) Take(n int) error {
	if b.used+n > b.limit {
		return errors.New("gateway: over the test limit")
	}
	b.used += n
	return nil
}
func (b *countingBudget) Give(n int) { b.used -= n }

func TestStreamBudget(t *testing.T) {
	b := &countingBudget{limit: 10}
	s := NewStream(true)
	s.Budget = b
	s.Expect(2)
	s.Answer(json.RawMessage(`1`), []byte("12345678"))    // fits
	s.Answer(json.RawMessage(`2`), []byte("12345678"))    // does not: replaced
	if ok := s.push(Outgoing{Data: []byte("note")}); ok { // does not: dropped
		t.Error("a notification over the budget was queued")
	}
	msgs, finished := s.Take(false)
	if !finished || len(msgs) != 2 {
		t.Fatalf("got %d messages (finished %v), want 2 answers", len(msgs), finished)
	}
	if msgs[0].Charged != 8 || b.used != 8 {
		t.Errorf("got charged %d, used %d; want 8, 8", msgs[0].Charged, b.used)
	}
	if msgs[1].Charged != 0 || !strings.Contains(string(msgs[1].Data), `"kind":"bufferFull"`) || !strings.Contains(string(msgs[1].Data), "over the test limit") {
		t.Errorf("got %s (charged %d), want an uncharged bufferFull error naming the limit", msgs[1].Data, msgs[1].Charged)
	}
	s.Give(msgs...)
	if b.used != 0 {
		t.Errorf("after Give: used %d, want 0", b.used)
	}

	// Detach gives back what is still queued.
	s2 := NewStream(false)
	s2.Budget = b
	s2.Expect(1)
	s2.Answer(json.RawMessage(`3`), []byte("1234"))
	s2.Detach()
	if b.used != 0 {
		t.Errorf("after Detach: used %d, want 0", b.used)
	}
}

// TestStreamWatch: a watcher sees its own request's answer once, as queued
// (a bufferFull replacement included), even when the client has gone; a
// cancelled request's watcher gets nil once the stream is settled.
func TestStreamWatch(t *testing.T) {
	s := NewStream(false)
	s.Budget = &countingBudget{limit: 60}
	s.Expect(3)
	got := map[string][]byte{}
	for _, id := range []string{"1", `"a"`, "3"} {
		s.Watch(json.RawMessage(id), func(answer []byte) { got[id] = answer })
	}
	s.Answer(json.RawMessage(`"a"`), []byte(`{"jsonrpc":"2.0","id":"a","result":{}}`))
	require.Equal(t, map[string][]byte{`"a"`: []byte(`{"jsonrpc":"2.0","id":"a","result":{}}`)}, got)

	big := []byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 64) + `"}}`)
	s.Answer(json.RawMessage("1"), big)
	require.Contains(t, string(got["1"]), KindBufferFull, "the watcher sees what the client gets")

	s.Detach()
	s.forget() // request 3 cancelled: settled without an answer
	require.Contains(t, got, "3")
	assert.Nil(t, got["3"])
	assert.True(t, s.Answered())
}
