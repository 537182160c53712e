package worker

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/options"
	"github.com/mcpgate/mcpgate/workerproto"
)

// TestLauncherRefusesIdentityEnv: an operator's environment cannot set a
// worker's identity, so worker.env holding MCPGATE_WORKER_READ_ONLY=false
// cannot make a read-only session read-write (before the Launcher, only
// config validation stood in the way).
func TestLauncherRefusesIdentityEnv(t *testing.T) {
	// workerproto.EnvPrestarted too: an operator who set it would make every cold
	// worker wait for an identity line no one writes, or, with a command
	// that reads one, take a client's first message for it.
	for _, name := range []string{workerproto.EnvUser, workerproto.EnvSessionID, workerproto.EnvReadOnly, workerproto.EnvToolsets, workerproto.EnvTools, workerproto.EnvServerName, workerproto.EnvServerVersion, workerproto.EnvServerTitle, workerproto.EnvScope, workerproto.EnvPrestarted} {
		t.Run(name, func(t *testing.T) {
			_, err := NewLauncher([]string{"/bin/true"}, LauncherOptions{Env: []string{"DB=x", name + "=false"}})
			if !errors.Is(err, ErrIdentityEnv) || !strings.Contains(err.Error(), name) {
				t.Errorf("got %v, want ErrIdentityEnv naming %s", err, name)
			}
		})
	}
	for _, env := range [][]string{nil, {"DB=x", "MCPGATE_WORKER_READ_ONLYX=1", "mcpgate_worker_read_only=1"}} {
		if _, err := NewLauncher([]string{"/bin/true"}, LauncherOptions{Env: env}); err != nil {
			t.Errorf("Env %q: got %v, want no error", env, err)
		}
	}
	if _, err := NewLauncher(nil, LauncherOptions{}); err == nil {
		t.Error("no command: got nil error")
	}
}

// TestLauncherEnviron: the base variables, then Env, then the identity,
// last, and nothing else.
func TestLauncherEnviron(t *testing.T) {
	t.Setenv("MCPGATE_TEST_SECRET", "x")
	l, err := NewLauncher([]string{"/bin/true"}, LauncherOptions{
		Env:       []string{"DB=x"},
		LookupEnv: func(k string) (string, bool) { return "/" + k, k != "TZ" },
	})
	if err != nil {
		t.Fatal(err)
	}
	id := workerproto.Identity{User: "ada", SessionID: "s", ReadOnly: true, ServerName: "mcpgate", ServerVersion: "dev"}
	want := append([]string{"PATH=/PATH", "HOME=/HOME", "LANG=/LANG", "DB=x"}, id.Environ()...)
	if got := l.environ(id, nil); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRewriteLeavesTheReader: the rewrite of an answer (the read-only
// tools/list filter, slow on a large list) runs on the goroutine that takes
// the answer, not on the worker's reader, so it cannot hold up the answers
// for the session's other streams. Here the rewrite waits until the other
// answer has been taken: run by the reader, it would wait for ever.
func TestRewriteLeavesTheReader(t *testing.T) {
	// The worker answers both requests at once, the one to rewrite first.
	p, err := StartProcess(ProcessConfig{Command: []string{"/bin/sh", "-c",
		`read a; read b; printf '%s\n%s\n' '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}' '{"jsonrpc":"2.0","id":2,"result":{}}'; cat >/dev/null`},
		Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(p, ConnConfig{Logger: quiet, StopGrace: time.Second})
	t.Cleanup(func() { _ = c.Close(t.Context(), KindSessionEnded, "test over") })

	list, other := NewStream(false), NewStream(false)
	list.Expect(1)
	other.Expect(1)
	otherTaken := make(chan struct{})
	c.Call(&jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`"list"`), Method: "tools/list"}, "", list,
		func(res json.RawMessage) json.RawMessage {
			<-otherTaken
			return json.RawMessage(`{"tools":["filtered"]}`)
		})
	c.Call(&jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`"other"`), Method: "ping"}, "", other, nil)

	select {
	case <-other.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the other stream's answer is held up behind the rewrite")
	}
	msgs, finished := other.Take(false)
	if len(msgs) != 1 || !finished || string(msgs[0].Data) != `{"jsonrpc":"2.0","id":"other","result":{}}` {
		t.Fatalf("other stream: got %+v (finished %v), want its answer", msgs, finished)
	}
	close(otherTaken)
	<-list.Ready()
	msgs, finished = list.Take(false)
	if len(msgs) != 1 || !finished || string(msgs[0].Data) != `{"jsonrpc":"2.0","id":"list","result":{"tools":["filtered"]}}` {
		t.Fatalf("rewritten stream: got %+v (finished %v), want the rewritten answer", msgs, finished)
	}
	if list.Results() != 1 || other.Results() != 1 {
		t.Errorf("got %d and %d results, want 1 and 1", list.Results(), other.Results())
	}
}

// TestNewLauncherRefusesInvalidOptions: NewLauncher answers with what
// LauncherOptions.Validate finds, so a program that builds a launcher
// without config cannot start workers with a message limit they cannot
// work under or a pool beyond its bound.
func TestNewLauncherRefusesInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  LauncherOptions
		field string
	}{
		{"negative stop grace", LauncherOptions{StopGrace: -1}, "StopGrace"},
		{"message limit under 1MiB", LauncherOptions{MaxMessageBytes: 1024}, "MaxMessageBytes"},
		{"negative pool", LauncherOptions{PoolSize: -1}, "PoolSize"},
		{"pool over its bound", LauncherOptions{PoolSize: MaxPoolSize + 1}, "PoolSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLauncher([]string{"/bin/true"}, tc.opts)
			if err == nil {
				t.Fatal("NewLauncher accepted options Validate refuses")
			}
			errs := options.Errors(err)
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("NewLauncher: %v; want one *options.Error on %s", err, tc.field)
			}
		})
	}
}
