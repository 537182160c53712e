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
		s.Watch(json.RawMessage(id), func(a *Answer) {
			got[id] = nil
			if a != nil {
				got[id] = a.Data
			}
		})
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

	// An answer whose encoding waits: the watcher sees the worker's result.
	s = NewStream(false)
	s.Expect(1)
	var seen *Answer
	s.Watch(json.RawMessage("1"), func(a *Answer) { seen = a })
	s.push(Outgoing{Response: true, Result: true, ID: json.RawMessage(`1`), size: 13,
		encode: func() []byte { return []byte("rewritten") }, result: json.RawMessage(`{"isError":true}`)})
	require.NotNil(t, seen)
	assert.Nil(t, seen.Data)
	assert.JSONEq(t, `{"isError":true}`, string(seen.Result))
}

// TestStreamBudgetDeferred: an answer still to be rewritten is charged for
// what it holds meanwhile (the worker's result), and a replaced one is not
// rewritten at all.
func TestStreamBudgetDeferred(t *testing.T) {
	b := &countingBudget{limit: 10}
	s := NewStream(false)
	s.Budget = b
	s.Expect(2)
	ran := 0
	encode := func() []byte { ran++; return []byte("rewritten") }
	s.push(Outgoing{Response: true, Result: true, ID: json.RawMessage(`1`), encode: encode, size: 6}) // fits
	s.push(Outgoing{Response: true, Result: true, ID: json.RawMessage(`2`), encode: encode, size: 6}) // does not: replaced
	msgs, finished := s.Take(false)
	if !finished || len(msgs) != 2 || ran != 1 {
		t.Fatalf("got %d messages (finished %v), %d rewrites; want 2, true, 1", len(msgs), finished, ran)
	}
	if string(msgs[0].Data) != "rewritten" || msgs[0].Charged != 6 || b.used != 6 {
		t.Errorf("got %s charged %d (used %d), want the rewrite charged 6", msgs[0].Data, msgs[0].Charged, b.used)
	}
	if !strings.Contains(string(msgs[1].Data), `"kind":"bufferFull"`) {
		t.Errorf("got %s, want the bufferFull error", msgs[1].Data)
	}
	s.Give(msgs...)
	if b.used != 0 || s.Results() != 2 {
		t.Errorf("after Give: used %d, %d results; want 0, 2", b.used, s.Results())
	}
}

// TestStreamWatchAllCallbacks: every callback of a request's Watch sees
// its answer (the audit event and the trace span of one call), while a
// second request of the same id (a batch) gets the next answer.
func TestStreamWatchAllCallbacks(t *testing.T) {
	s := NewStream(false)
	s.Expect(2)
	var first, second, other []string
	seen := func(to *[]string) func(*Answer) {
		return func(a *Answer) {
			if a == nil {
				*to = append(*to, "nil")
				return
			}
			*to = append(*to, string(a.Data))
		}
	}
	s.Watch(json.RawMessage("1"), seen(&first), nil, seen(&second))
	s.Watch(json.RawMessage("1"), seen(&other))
	s.Answer(json.RawMessage("1"), []byte("a"))
	s.Answer(json.RawMessage("1"), []byte("b"))
	assert.Equal(t, []string{"a"}, first)
	assert.Equal(t, []string{"a"}, second)
	assert.Equal(t, []string{"b"}, other)
}
