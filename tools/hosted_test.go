package tools

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/workerproto"
)

// TestServeSessions: a worker that hosts sessions reads only frames. A
// line that is not one (a client's message as it would be sent to a
// worker of its own) is dropped; a session that could not start is ended
// with an end frame, and its later messages dropped; a hosted session
// answers in its own frames, with its own identity; the worker's own
// channel is session 0.
func TestServeSessions(t *testing.T) {
	own, err := NewServer(Options{User: "alice"})
	require.NoError(t, err)
	host, err := NewSessionHost(Options{User: "alice"}, "sqlite")
	require.NoError(t, err)
	newSession := func(ctx context.Context, id string) (func(context.Context, io.Reader, io.Writer) error, func(), error) {
		if id == "broken" {
			return nil, nil, errors.New("the database did not open")
		}
		return func(ctx context.Context, in io.Reader, out io.Writer) error { return host.Serve(ctx, id, nil, in, out) }, func() {}, nil
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeSessions(t.Context(), own, newSession, inR, outW, nil); outW.Close() }()

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	const status = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`
	lines := []string{
		"not a frame",
		status, // a bare message: no session
		string(workerproto.OpenLine(1, "s-one")),
		string(workerproto.OpenLine(2, "broken")),
		string(workerproto.AppendFrame(nil, 2, []byte(initialize))),
		string(workerproto.AppendFrame(nil, 1, []byte(initialize))),
		string(workerproto.AppendFrame(nil, 1, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))),
		string(workerproto.AppendFrame(nil, 1, []byte(status))),
	}
	go func() { _, _ = io.WriteString(inW, strings.Join(lines, "\n")+"\n") }()

	out := bufio.NewReader(outR)
	var frames []workerproto.Frame
	for len(frames) < 3 {
		line, err := out.ReadBytes('\n')
		require.NoError(t, err)
		f, err := workerproto.ParseFrame(line[:len(line)-1])
		require.NoError(t, err, "the worker wrote a line that is not a frame: %s", line)
		frames = append(frames, f)
	}
	inW.Close()
	_, _ = io.Copy(io.Discard, out)
	require.NoError(t, <-done)

	assert.Equal(t, workerproto.Frame{Session: 2, End: true}, frames[0], "the session that could not start is ended")
	assert.Equal(t, int64(1), frames[1].Session)
	assert.Contains(t, string(frames[1].Message), `"serverInfo"`)
	assert.Equal(t, int64(1), frames[2].Session)
	assert.Contains(t, string(frames[2].Message), `"sessionId":"s-one"`)
}
