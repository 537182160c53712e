package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
)

// tooLong handles a line of n bytes over the process's MaxLineBytes, of
// which head is the start. An answer to a request in flight fails that
// request alone, with KindTooLarge; the worker and the session go on. A
// worker's own request or notification that long, or an answer whose id
// does not come before its result, is dropped and logged.
func (c *Conn) tooLong(head []byte, n int) {
	if c.framed {
		c.tooLongFramed(head, n)
		return
	}
	c.tooLongMessage(head, n)
}

// tooLongMessage is tooLong for a line that is one message.
func (c *Conn) tooLongMessage(head []byte, n int) {
	id, ok := answerID(head)
	gid, err := strconv.ParseInt(string(id), 10, 64)
	c.mu.Lock()
	cl := c.calls[gid]
	if ok && err == nil && cl != nil {
		c.forgetLocked(gid, cl)
	}
	c.mu.Unlock()
	if !ok || err != nil || cl == nil {
		c.proc.Logf(slog.LevelWarn, "worker: dropped a message over the message size limit", "bytes", n, "limit", c.proc.max)
		return
	}
	c.log.Warn("worker: an answer over the message size limit failed its request", "pid", c.Pid(), "bytes", n, "limit", c.proc.max)
	cl.stream.Answer(cl.clientID, internalError(cl.clientID, fmt.Sprintf(
		"gateway: the worker's answer was %d bytes, over the gateway's limit of %d bytes for one worker message (limits.max_worker_message_bytes); this request failed, the session goes on: ask for less", n, c.proc.max), KindTooLarge))
}

// answerID reads the id of a response from the start of its line: the
// members before "result" or "error" (go-sdk writes "jsonrpc", then "id").
// It reports false for a request or notification, or when the id does not
// come before the result.
func answerID(head []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var id json.RawMessage
	for {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := t.(string)
		switch key {
		case "id", "jsonrpc":
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, false
			}
			if key == "id" {
				id = v
			}
		case "result", "error": // an answer: the rest is what was too long
			return id, id != nil
		default: // method, params: the worker's own request or notification
			return nil, false
		}
	}
}
