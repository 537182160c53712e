package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/config"
)

func TestParseConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cfg, err := parseConfig(nil, "/self", io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Systems, allSystems) || !slices.Equal(cfg.Concurrency, []int{1, 16, 64}) {
			t.Errorf("got systems %v concurrency %v", cfg.Systems, cfg.Concurrency)
		}
		if got, want := strings.Join(cfg.Worker, " "), "/self stdio-server"; got != want {
			t.Errorf("got worker %q, want %q", got, want)
		}
		if cfg.Trivial.Name != "echo" || cfg.Realistic != nil {
			t.Errorf("got trivial %+v realistic %+v", cfg.Trivial, cfg.Realistic)
		}
	})
	t.Run("flags", func(t *testing.T) {
		cfg, err := parseConfig([]string{
			"-systems", "floor, mcpgate", "-concurrency", "2,8",
			"-realistic", `query:{"sql":"select 1"}`, "-worker", "bin/mcpgate worker",
			"-skip", "mcpgate-tls=not built", "-mcpgate-tls", "",
		}, "/self", io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Systems, []string{"floor", "mcpgate"}) || !slices.Equal(cfg.Concurrency, []int{2, 8}) {
			t.Errorf("got systems %v concurrency %v", cfg.Systems, cfg.Concurrency)
		}
		if cfg.Realistic == nil || cfg.Realistic.Name != "query" || string(cfg.Realistic.Args) != `{"sql":"select 1"}` {
			t.Errorf("got realistic %+v", cfg.Realistic)
		}
		if !slices.Equal(cfg.Worker, []string{"bin/mcpgate", "worker"}) || len(cfg.MCPGateTLS) != 0 {
			t.Errorf("got worker %q tls %q", cfg.Worker, cfg.MCPGateTLS)
		}
		if cfg.Skip["mcpgate-tls"] != "not built" {
			t.Errorf("got skip %v", cfg.Skip)
		}
	})
	t.Run("variant", func(t *testing.T) {
		cfg, err := parseConfig([]string{"-systems", "floor,floor-gmp1", "-variant", "floor-gmp1=floor:GOMAXPROCS=1 GOGC=200"}, "/self", io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		v := cfg.Variants["floor-gmp1"]
		if v.Base != "floor" || !slices.Equal(v.Env, []string{"GOMAXPROCS=1", "GOGC=200"}) {
			t.Errorf("got variant %+v", v)
		}
	})
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown system", []string{"-systems", "floor,nginx"}, `unknown system "nginx"`},
		{"bad concurrency", []string{"-concurrency", "1,zero"}, `"zero" is not a positive number`},
		{"bad tool JSON", []string{"-trivial", "echo:{oops"}, "not valid JSON"},
		{"every problem at once", []string{"-systems", "x", "-concurrency", "0"}, "is not a positive number"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"variant of an unknown system", []string{"-variant", "x=nginx:A=1"}, `unknown system "nginx"`},
		{"variant named like a system", []string{"-variant", "sdk=floor:A=1"}, "sdk is already a system"},
		{"variant without a base", []string{"-variant", "x"}, "want name=system:KEY=value"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(tt.args, "/self", io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	v := addrVars("127.0.0.1:8123")
	v["issuer"] = "127.0.0.1:9443"
	got := v.expand([]string{"serve", "--listen", "{addr}", "--port={port}", "{host}", "MCPGATE_AUTH_ISSUER=https://{issuer}", "{unknown}"})
	want := []string{"serve", "--listen", "127.0.0.1:8123", "--port=8123", "127.0.0.1", "MCPGATE_AUTH_ISSUER=https://127.0.0.1:9443", "{unknown}"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"plain", []string{"/bin/mcpgate", "worker"}, "/bin/mcpgate worker"},
		{"space", []string{"a b"}, "'a b'"},
		{"quote", []string{"it's"}, `'it'\''s'`},
		{"empty", []string{""}, "''"},
		{"dollar", []string{"$HOME"}, "'$HOME'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shellQuote(tt.argv); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSplitWordsRoundTripsShellQuote(t *testing.T) {
	argv := []string{"/bin/mcpgate", "worker", "it's", "a b", "", "$HOME"}
	got, err := config.SplitWords(shellQuote(argv))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, argv) {
		t.Errorf("got %q, want %q", got, argv)
	}
}
