// Command stubworker is a tiny stdio MCP server for the gateway's tests: it
// stands in for an external worker and can misbehave on demand. It speaks
// newline-delimited JSON-RPC by hand, so each test controls exactly what is
// on the wire.
//
// Tools: echo, sleep, progress, log, sample, crash, stderr, pid, spawn, env,
// inflight, await (blocks on a FIFO), alloc (takes memory), write (the one
// "gated" tool); ask2 (unlisted: two sampling requests at once, in one
// write); clientcaps (unlisted: the capabilities initialize declared); credhash (unlisted: the
// SHA-256 of the variable its text names, or of the file the variable
// names when it is /proc/self/fd/N, prefixed "file:"); feedhash (unlisted: the SHA-256 of the
// last header set the gateway sent on the credential socket, fd 3, as mcpgate upstream reads
// it); blob (unlisted: a pre-built result of a given size, for
// the relay benchmarks). `stubworker exec-limited ...` is the rlimit helper
// (worker.ExecLimited). Environment: STUB_IGNORE_TERM=1 ignores
// SIGTERM; STUB_NAIVE=1 reads the tool name by exact key and runs an id-less
// tools/call; STUB_CALL_LOG=FILE records every tool run; STUB_DEAF=1 stops
// reading stdin after notifications/initialized; STUB_HANG_INIT=1
// never answers initialize; STUB_INIT_ERROR=1
// refuses it.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/worker"
)

type message = jsonrpc.Message

// kept holds what alloc allocated, so that it stays allocated.
var kept [][]byte

type stub struct {
	outMu sync.Mutex
	out   *bufio.Writer

	mu         sync.Mutex
	nextID     int
	waiting    map[string]chan message // our requests to the client
	clientCaps string                  // the capabilities of initialize
	cancelled  map[string]chan struct{}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "exec-limited" {
		// The rlimit helper, as mcpgate exec-limited is; not built with
		// -race, whose shadow memory no address-space limit leaves room for.
		args, err := sandbox.ApplyArg(os.Args[2:]) // and confines itself, as mcpgate exec-limited does
		if err == nil {
			err = worker.ExecLimited(args, os.Environ())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	if os.Getenv("STUB_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	s := &stub{out: bufio.NewWriter(os.Stdout), waiting: map[string]chan message{}, cancelled: map[string]chan struct{}{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			s.send(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}})
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil: // an answer to our request
			s.mu.Lock()
			ch := s.waiting[string(m.ID)]
			delete(s.waiting, string(m.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Method == "notifications/cancelled":
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			s.mu.Lock()
			if ch := s.cancelled[string(p.RequestID)]; ch != nil {
				close(ch)
				delete(s.cancelled, string(p.RequestID))
			}
			s.mu.Unlock()
		case m.Method == "notifications/initialized" && os.Getenv("STUB_DEAF") == "1":
			time.Sleep(time.Hour) // stops reading stdin: a hung worker
		case m.ID == nil && m.Method == "tools/call" && os.Getenv("STUB_NAIVE") == "1":
			// A naive server runs an id-less tools/call too.
			record(exactName(m.Params))
		case m.ID == nil: // other notifications
		default:
			cancel := make(chan struct{})
			s.mu.Lock()
			s.cancelled[string(m.ID)] = cancel
			s.mu.Unlock()
			go s.handle(m, cancel)
		}
	}
	// stdin closed: the gateway wants us gone. With SIGTERM ignored, linger
	// so that the gateway must kill us.
	if os.Getenv("STUB_IGNORE_TERM") == "1" {
		for {
			time.Sleep(time.Hour)
		}
	}
}

func (s *stub) send(v any) {
	b, _ := json.Marshal(v)
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *stub) reply(id json.RawMessage, result any) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *stub) fail(id json.RawMessage, code int, msg string) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func text(t string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}}
}

// request sends the client a request and waits for its answer.
func (s *stub) request(method string, params any) message {
	s.mu.Lock()
	s.nextID++
	id := strconv.Itoa(s.nextID)
	ch := make(chan message, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.nextIDRaw(id), "method": method, "params": params})
	return <-ch
}

// requestAll sends the client one request per params, all in one write,
// and waits for every answer, returned in order.
func (s *stub) requestAll(method string, params []any) []message {
	chans := make([]chan message, len(params))
	var lines []byte
	s.mu.Lock()
	for i, p := range params {
		s.nextID++
		id := strconv.Itoa(s.nextID)
		chans[i] = make(chan message, 1)
		s.waiting[id] = chans[i]
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": p})
		lines = append(append(lines, b...), '\n')
	}
	s.mu.Unlock()
	s.outMu.Lock()
	s.out.Write(lines)
	s.out.Flush()
	s.outMu.Unlock()
	out := make([]message, len(chans))
	for i, ch := range chans {
		out[i] = <-ch
	}
	return out
}

func (s *stub) nextIDRaw(id string) json.RawMessage { return json.RawMessage(id) }

var tools = []string{"echo", "sleep", "progress", "log", "sample", "crash", "stderr", "pid", "spawn", "env", "inflight", "write", "big", "await", "alloc"}

func (s *stub) handle(m message, cancel chan struct{}) {
	defer func() {
		s.mu.Lock()
		delete(s.cancelled, string(m.ID))
		s.mu.Unlock()
	}()
	switch m.Method {
	case "initialize":
		if os.Getenv("STUB_HANG_INIT") == "1" {
			fmt.Fprintln(os.Stderr, "stub: hanging in initialize")
			<-cancel
			return
		}
		if os.Getenv("STUB_INIT_ERROR") == "1" {
			s.fail(m.ID, -32602, "stub: initialize refused")
			return
		}
		var p struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		s.clientCaps = string(p.Capabilities)
		s.mu.Unlock()
		v := "2025-11-25"
		switch p.ProtocolVersion {
		case "2025-06-18", "2025-03-26":
			v = p.ProtocolVersion
		}
		s.reply(m.ID, map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
			"serverInfo":      map[string]any{"name": "stub", "version": "1"},
		})
	case "ping":
		s.reply(m.ID, map[string]any{})
	case "tools/list":
		list := make([]any, 0, len(tools))
		for _, t := range tools {
			list = append(list, map[string]any{"name": t, "inputSchema": map[string]any{"type": "object"}})
		}
		s.reply(m.ID, map[string]any{"tools": list})
	case "tools/call":
		s.call(m, cancel)
	default:
		s.fail(m.ID, -32601, "stub: method not found: "+m.Method)
	}
}

func (s *stub) call(m message, cancel chan struct{}) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text  string `json:"text"`
			MS    int    `json:"ms"`
			Steps int    `json:"steps"`
			Code  int    `json:"code"`
			Size  int    `json:"size"`
			Form  string `json:"form"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.fail(m.ID, -32602, "stub: bad params")
		return
	}
	if os.Getenv("STUB_NAIVE") == "1" {
		p.Name = exactName(m.Params) // as SDKs read it: the key "name" exactly
	}
	record(p.Name)
	a := p.Arguments
	switch p.Name {
	case "echo":
		s.reply(m.ID, text(a.Text))
	case "sleep":
		if p.Meta.ProgressToken != nil { // tells the test the call is running
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 0}})
		}
		select {
		case <-time.After(time.Duration(a.MS) * time.Millisecond):
			if p.Meta.ProgressToken != nil && a.Steps > 0 { // and that it ends
				s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1}})
			}
			s.reply(m.ID, text("slept"))
		case <-cancel: // MCP §Cancellation: no answer to a cancelled request
		}
	case "progress":
		for i := 1; i <= a.Steps; i++ {
			if p.Meta.ProgressToken != nil {
				s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": a.Steps}})
			}
		}
		s.reply(m.ID, text(fmt.Sprintf("%d steps", a.Steps)))
	case "log":
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
			"params": map[string]any{"level": "info", "logger": "stub", "data": a.Text}})
		s.reply(m.ID, text("logged"))
	case "sample":
		ans := s.request("sampling/createMessage", map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": a.Text}}},
			"maxTokens": 10,
		})
		if ans.Error != nil {
			s.reply(m.ID, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": string(ans.Error)}}})
			return
		}
		var r struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(ans.Result, &r)
		s.reply(m.ID, text("sampled: "+r.Content.Text))
	case "ask2": // unlisted: two sampling requests at once, in one write, as an SDK asks in parallel
		answers := s.requestAll("sampling/createMessage", []any{
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": a.Text + " 1"}}}, "maxTokens": 10},
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": a.Text + " 2"}}}, "maxTokens": 10},
		})
		var got []string
		for _, ans := range answers {
			var r struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if ans.Error != nil {
				got = append(got, "error "+string(ans.Error))
				continue
			}
			_ = json.Unmarshal(ans.Result, &r)
			got = append(got, r.Content.Text)
		}
		s.reply(m.ID, text("sampled: "+strings.Join(got, ", ")))
	case "credhash": // unlisted: a hash of the credential in the variable text names (or in the file it names)
		v, ok := os.LookupEnv(a.Text)
		if !ok {
			s.reply(m.ID, text("none"))
			break
		}
		if strings.HasPrefix(v, "/proc/self/fd/") {
			b, err := os.ReadFile(v)
			if err != nil {
				s.reply(m.ID, text("unreadable: "+err.Error()))
				break
			}
			v = "file:" + string(b)
		}
		sum := sha256.Sum256([]byte(v))
		s.reply(m.ID, text(hex.EncodeToString(sum[:])))
	case "feedhash": // unlisted: the SHA-256 of the last header set on the credential socket at fd 3
		s.reply(m.ID, text(feedHash()))
	case "clientcaps": // unlisted: the client capabilities initialize declared
		s.mu.Lock()
		caps := s.clientCaps
		s.mu.Unlock()
		s.reply(m.ID, text(caps))
	case "crash":
		os.Exit(a.Code)
	case "stderr":
		fmt.Fprintln(os.Stderr, a.Text)
		s.reply(m.ID, text("written to stderr"))
	case "pid":
		s.reply(m.ID, text(strconv.Itoa(os.Getpid())))
	case "spawn":
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			s.fail(m.ID, -32603, err.Error())
			return
		}
		s.reply(m.ID, text(strconv.Itoa(cmd.Process.Pid)))
	case "whoami": // the account it runs as and its working directory
		wd, _ := os.Getwd()
		s.reply(m.ID, text(fmt.Sprintf("uid=%d gid=%d dir=%s", os.Getuid(), os.Getgid(), wd)))
	case "readfile": // what reading the file at text gave: its bytes or the error
		b, err := os.ReadFile(a.Text)
		if err != nil {
			s.reply(m.ID, text("error: "+err.Error()))
			return
		}
		s.reply(m.ID, text("read: "+string(b)))
	case "writefile": // writes "written" to the file at text
		if err := os.WriteFile(a.Text, []byte("written"), 0o600); err != nil {
			s.reply(m.ID, text("error: "+err.Error()))
			return
		}
		s.reply(m.ID, text("wrote"))
	case "env":
		b, _ := json.Marshal(os.Environ())
		s.reply(m.ID, text(string(b)))
	case "inflight": // requests being handled, besides this one
		s.mu.Lock()
		n := len(s.cancelled) - 1
		s.mu.Unlock()
		s.reply(m.ID, text(strconv.Itoa(n)))
	case "write":
		s.reply(m.ID, text("written"))
	case "await": // blocks until something is written to the FIFO at text
		if p.Meta.ProgressToken != nil { // tells the test the call is running
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 0}})
		}
		if _, err := os.ReadFile(a.Text); err != nil {
			s.fail(m.ID, -32603, err.Error())
			return
		}
		s.reply(m.ID, text("released"))
	case "alloc": // allocates and touches size bytes, then keeps them
		b := make([]byte, a.Size)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		kept = append(kept, b)
		s.reply(m.ID, text(fmt.Sprintf("allocated %d bytes", a.Size)))
	case "big": // an answer of about size bytes
		s.reply(m.ID, text(strings.Repeat("b", a.Size)))
	case "blob": // unlisted: a pre-built result of size bytes, for the relay benchmarks
		if p.Meta.ProgressToken != nil { // makes the answer come on an SSE stream
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 0}})
		}
		s.blob(m.ID, a.Size, a.Form)
	default:
		s.fail(m.ID, -32602, "stub: unknown tool "+p.Name)
	}
}
