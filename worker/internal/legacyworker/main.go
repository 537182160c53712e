// Command legacyworker makes any stdio MCP server look like one that speaks
// only 2025-11-25, for the conformance run through a translated worker
// (scripts/conformance.sh with LEGACY_WORKER=1): it runs the server given as
// its arguments and relays stdio both ways, except that it refuses
// server/discover (-32601, as a 2025 server does) and strips the
// io.modelcontextprotocol/* keys of 2026-07-28 from every message's
// params._meta, so the server serves each request on the session its
// initialize opened.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/mcpgate/mcpgate/worker"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: legacyworker SERVER [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) != nil {
			writeLine(in, line)
			continue
		}
		var method string
		_ = json.Unmarshal(m["method"], &method)
		if method == "server/discover" {
			// The server's own output goes straight to stdout; an error
			// line of ours could interleave with it, so send it through
			// the server instead: an unknown method it answers -32601.
			m["method"] = json.RawMessage(`"mcpgate/legacy-discover-refused"`)
		}
		if p, ok := m["params"]; ok {
			m["params"], _ = worker.StripModernMeta(p)
		}
		b, _ := json.Marshal(m)
		writeLine(in, b)
	}
	in.Close()
	_ = cmd.Wait()
}

func writeLine(w io.Writer, b []byte) {
	_, _ = w.Write(append(append([]byte{}, b...), '\n'))
}
