package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// blobs holds the results blob built, by size, so that the benchmarks
// measure the relay rather than the stub's encoding.
var (
	blobMu sync.Mutex
	blobs  = map[int][]byte{}
)

// blob answers id with a result of exactly size bytes, written as the
// go-sdk does ("jsonrpc", "id", then "result"), or in another form:
// "id-last" puts the id after the result, "dup-id" writes the id twice
// (a wrong one first, the right one after the result: encoding/json takes
// the last), "cut" writes half the line and exits.
func (s *stub) blob(id json.RawMessage, size int, form string) {
	blobMu.Lock()
	res := blobs[size]
	if res == nil {
		const head, tail = `{"content":[{"type":"text","text":"`, `"}]}`
		res = make([]byte, 0, max(size, len(head)+len(tail)))
		res = append(res, head...)
		for len(res) < size-len(tail) {
			res = append(res, 'b')
		}
		res = append(res, tail...)
		blobs[size] = res
	}
	blobMu.Unlock()
	var line []byte
	switch form {
	case "":
		s.outMu.Lock()
		defer s.outMu.Unlock()
		s.out.WriteString(`{"jsonrpc":"2.0","id":`)
		s.out.Write(id)
		s.out.WriteString(`,"result":`)
		s.out.Write(res) // no copy: the buffered head goes first
		s.out.WriteString("}\n")
		s.out.Flush()
		return
	case "id-last":
		line = append(append(append(append([]byte(`{"jsonrpc":"2.0","result":`), res...), `,"id":`...), id...), '}')
	case "dup-id":
		line = append(append(append(append([]byte(`{"jsonrpc":"2.0","id":999999,"result":`), res...), `,"id":`...), id...), '}')
	default: // "cut"
		line = append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...), res...), '}')
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	if form == "cut" {
		s.out.Write(line[:len(line)/2])
		s.out.Flush()
		os.Exit(3)
	}
	s.out.Write(line)
	s.out.WriteByte('\n')
	s.out.Flush()
}

// exactName reads params.name with an exact key match, as SDKs do (Go's
// struct decoding would match "Name" too).
func exactName(params json.RawMessage) string {
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(params, &p) == nil {
		_ = json.Unmarshal(p["name"], &name)
	}
	return name
}

// record appends a tool the stub ran to $STUB_CALL_LOG, when set, so a test
// can see what ran in the worker whatever the gateway answered.
func record(name string) {
	path := os.Getenv("STUB_CALL_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, name)
}

// feedLast is the last message read from the credential socket (fd 3).
var feedLast []byte

// feedHash takes every message waiting on fd 3, as mcpgate upstream does
// before each request, and hashes the last; "none" before any.
func feedHash() string {
	buf := make([]byte, 256<<10)
	for {
		n, _, _, _, err := unix.Recvmsg(3, buf, nil, unix.MSG_DONTWAIT)
		if err != nil || n == 0 {
			break
		}
		feedLast = append([]byte(nil), buf[:n]...)
	}
	if feedLast == nil {
		return "none"
	}
	sum := sha256.Sum256(feedLast)
	return hex.EncodeToString(sum[:])
}
