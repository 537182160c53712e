package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// maxFrame bounds one inbound JSON-RPC line, as the SDK's own stdio
// transport does (mcp.DefaultMaxLineLength).
const maxFrame = mcp.DefaultMaxLineLength

// Serve runs srv over newline-delimited JSON-RPC on in and out (a worker's
// stdin and stdout) until in ends or ctx is cancelled. A line that is not a
// JSON-RPC message is answered with a JSON-RPC error (-32700 parse error,
// -32600 invalid request) and skipped: the go-sdk would end the whole
// session on it, and one bad frame must not cost a client its session.
func Serve(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	defer pr.Close()
	go filterFrames(in, pw, w)
	err := srv.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: w})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // stdin ended, or the gateway stopped the worker
	}
	return err
}

// filterFrames copies the valid JSON-RPC lines of in to pw, answers the
// others on out, and closes pw when in ends. It stops when pw is closed.
func filterFrames(in io.Reader, pw *io.PipeWriter, out io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if reply := check(line); reply != nil {
				if _, werr := out.Write(reply); werr != nil {
					pw.CloseWithError(werr)
					return
				}
			} else if _, werr := pw.Write(append(markRequest(line), '\n')); werr != nil {
				return // the server has stopped
			}
		}
		if err != nil {
			pw.CloseWithError(err) // io.EOF ends the session normally
			return
		}
	}
}

// readLine reads one line without its newline. A line over maxFrame is
// drained and returned as a truncated line, which check then refuses.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxFrame {
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimSuffix(line, []byte("\n")), err
		}
	}
}

// check returns the error answer for a line that is not a JSON-RPC 2.0
// message or a non-empty batch of them (JSON-RPC 2.0 §5.1), or nil. It
// applies the gateway's rules (jsonrpc.DecodeBody), so what the gateway
// forwards always passes.
func check(line []byte) []byte {
	_, _, err := jsonrpc.DecodeBody(line)
	var de *jsonrpc.DecodeError
	if !errors.As(err, &de) {
		return nil
	}
	switch de.Err {
	case jsonrpc.ErrParse:
		return rpcError(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
	case jsonrpc.ErrEmptyBatch:
		return rpcError(nil, jsonrpc.CodeInvalidRequest, "invalid request: an empty batch")
	}
	return rpcError(de.ID, jsonrpc.CodeInvalidRequest, `invalid request: not a JSON-RPC 2.0 message (want "jsonrpc": "2.0", and a method, a result or an error)`)
}

func rpcError(id json.RawMessage, code int, message string) []byte {
	b := jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: code, Message: "mcpgate worker: " + message})
	return append(b, '\n')
}

// lockedWriter serialises whole writes, so that a filter's error answer
// never lands inside one of the server's lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: the worker's stdout outlives the session.
func (l *lockedWriter) Close() error { return nil }

// Warm runs a throwaway session of a server of the tools that need no
// database over pipes: initialize and tools/list, as a client would send
// them. It is the SDK's and the JSON codecs' first-use work, which a
// pre-started worker pays before its identity rather than in its session's
// first exchange.
func Warm(ctx context.Context) error {
	srv, err := NewServer(Options{})
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, srv, inR, outW)
		outW.Close()
	}()
	go func() {
		_, _ = io.WriteString(inW, warmSession)
		// The answers are read below; the session ends with its input.
	}()
	out := bufio.NewReader(outR)
	for range 2 {
		if _, err := out.ReadBytes('\n'); err != nil {
			inW.Close()
			return fmt.Errorf("tools: warm up: %w", err)
		}
	}
	inW.Close()
	_, _ = io.Copy(io.Discard, out)
	return <-done
}

// warmSession is what Warm sends.
const warmSession = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"warm","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
