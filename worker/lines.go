package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ReadLoop calls fn with each line the worker writes on stdout, until the
// stream ends. A line that fits in the reader's buffer (64 KiB) is passed
// in place, own nil: fn must not keep it. A longer one is gathered in
// pooled blocks and copied once into a buffer of its exact size, with
// LineRoom bytes of free room before it, which fn owns: own is that
// buffer, line its tail. A line over the process's MaxLineBytes is not
// kept: it is read through to its end, and tooLong gets its first bytes (up
// to headBytes) and its length instead. ReadLoop returns nil at end of
// file.
func (p *Process) ReadLoop(fn func(line, own []byte), tooLong func(head []byte, n int)) error {
	return p.readLoop(fn, tooLong, nil)
}

// readLoop is ReadLoop; idle, when not nil, is called after a line when
// the reader holds no more of the worker's output: the worker has nothing
// more to say for now (Conn's messages that wait for the worker's
// questions of one moment to be gathered).
func (p *Process) readLoop(fn func(line, own []byte), tooLong func(head []byte, n int), idle func()) error {
	defer p.stdout.Close()
	var src io.Reader = p.stdout // what r reads
	r := bufio.NewReaderSize(src, 64<<10)
	var (
		long lineBlocks // a line longer than r's buffer, so far
		head []byte     // the start of a line over the limit
		n    int        // bytes of the line so far
	)
	defer long.release()
	for {
		chunk, err := r.ReadSlice('\n')
		end := err == nil // chunk ends the line
		switch {
		case head != nil:
		case n+len(chunk) > p.max:
			head = long.head(chunk, headBytes)
			long.release()
		case end && n == 0:
			line(chunk, nil, fn) // the whole line in r's buffer: no copy
		default:
			long.add(chunk)
			if errors.Is(err, bufio.ErrBufferFull) {
				// A long line (ReadSlice has handed out all r held): the rest goes
				// straight into the blocks, not through r's buffer.
				before := long.n
				var rest []byte
				end, rest, err = long.readFrom(src, p.max)
				n += long.n - before
				if len(rest) > 0 { // the next lines' start: r reads it first
					src = io.MultiReader(bytes.NewReader(rest), src)
					r.Reset(src)
				}
				if end {
					err = nil
				} else if err == nil {
					err = bufio.ErrBufferFull // near the limit: on through r
				}
			}
			if end {
				own := long.join(LineRoom)
				line(own[LineRoom:], own, fn)
			}
		}
		n += len(chunk)
		if end {
			if head != nil {
				tooLong(head, n-1) // less the newline
			}
			head, n = nil, 0
			if idle != nil && r.Buffered() == 0 {
				idle()
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if head == nil && long.n > 0 {
			own := long.join(LineRoom) // a last line without a newline
			line(own[LineRoom:], own, fn)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
			return nil
		}
		return fmt.Errorf("worker: reading stdout: %w", err)
	}
}

// LineRoom is the free room ReadLoop leaves before a long line it hands
// over: enough to write a head longer than the worker's (the client's id
// in place of the gateway's) without copying the line.
const LineRoom = 256

// headBytes is how much of a line over the limit ReadLoop keeps, enough
// for the members before a response's result.
const headBytes = 4096

// blockSize is the size of the blocks a long line is gathered in.
const blockSize = 1 << 20

// blockPool holds the blocks of lineBlocks, shared by every worker's
// reader: a line is copied into them as it comes, then once into a buffer
// of its size, so that a long line costs two copies and one allocation of
// its size rather than the many of a slice grown by append.
var blockPool = sync.Pool{New: func() any { b := make([]byte, 0, blockSize); return &b }}

// lineBlocks is a line being gathered.
type lineBlocks struct {
	blocks []*[]byte
	n      int
}

// add appends p to the line.
func (l *lineBlocks) add(p []byte) {
	l.n += len(p)
	for len(p) > 0 {
		if len(l.blocks) == 0 || len(*l.blocks[len(l.blocks)-1]) == blockSize {
			l.blocks = append(l.blocks, blockPool.Get().(*[]byte))
		}
		b := l.blocks[len(l.blocks)-1]
		k := min(len(p), blockSize-len(*b))
		*b = append(*b, p[:k]...)
		p = p[k:]
	}
}

// readFrom reads the rest of the line from src straight into the blocks,
// while the line stays within max bytes. It reports whether the line ended
// (its newline read) and returns a copy of what src gave after the newline,
// or src's error, or neither when the line came near max.
func (l *lineBlocks) readFrom(src io.Reader, max int) (ended bool, rest []byte, err error) {
	for {
		if len(l.blocks) == 0 || len(*l.blocks[len(l.blocks)-1]) == blockSize {
			l.blocks = append(l.blocks, blockPool.Get().(*[]byte))
		}
		b := l.blocks[len(l.blocks)-1]
		free := (*b)[len(*b):blockSize]
		if l.n+len(free) > max {
			return false, nil, nil
		}
		k, err := src.Read(free)
		if i := bytes.IndexByte(free[:k], '\n'); i >= 0 {
			*b = (*b)[:len(*b)+i+1]
			l.n += i + 1
			return true, bytes.Clone(free[i+1 : k]), nil
		}
		*b = (*b)[:len(*b)+k]
		l.n += k
		if err != nil {
			return false, nil, err
		}
	}
}

// join returns the line in a buffer of its own, after room free bytes,
// and starts a new one.
func (l *lineBlocks) join(room int) []byte {
	out := make([]byte, room, room+l.n)
	for _, b := range l.blocks {
		out = append(out, *b...)
	}
	l.release()
	return out
}

// head returns a copy of the first max bytes of the line followed by p.
func (l *lineBlocks) head(p []byte, max int) []byte {
	var h []byte
	for _, b := range l.blocks {
		h = append(h, (*b)[:min(len(*b), max-len(h))]...)
	}
	return append(h, p[:min(len(p), max-len(h))]...)
}

// release gives the blocks back and empties the line.
func (l *lineBlocks) release() {
	for _, b := range l.blocks {
		*b = (*b)[:0]
		blockPool.Put(b)
	}
	l.blocks, l.n = l.blocks[:0], 0
}

// line calls fn with b less its line ending, unless that leaves nothing;
// own is b's own buffer, or nil (see ReadLoop).
func line(b, own []byte, fn func(line, own []byte)) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) > 0 {
		fn(b, own)
	}
}
