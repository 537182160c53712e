package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/config"
)

// Variant is a system run a second time under another name with more
// environment, for an A/B in one run: `-variant floor-gmp1=floor:GOMAXPROCS=1`.
// The environment goes where that system's own settings go: the workers'
// for floor and supergateway, the server's for sdk and the mcpgate systems
// (so MCPGATE_WORKER_ENV=… reaches mcpgate's workers).
type Variant struct {
	Base string   `json:"base"`
	Env  []string `json:"env"`
}

// parseVariant reads name=base:KEY=value KEY=value.
func parseVariant(v string) (string, Variant, error) {
	name, rest, ok := strings.Cut(v, "=")
	base, env, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || name == "" {
		return "", Variant{}, fmt.Errorf("mcpbench: -variant %q: want name=system:KEY=value ...", v)
	}
	if slices.Contains(allSystems, name) {
		return "", Variant{}, fmt.Errorf("mcpbench: -variant %q: %s is already a system", v, name)
	}
	if !slices.Contains(allSystems, base) {
		return "", Variant{}, fmt.Errorf("mcpbench: -variant %q: unknown system %q", v, base)
	}
	words, err := config.SplitWords(env)
	if err != nil {
		return "", Variant{}, fmt.Errorf("mcpbench: -variant %q: %w", v, err)
	}
	return name, Variant{Base: base, Env: words}, nil
}

// stringList is a flag holding a list: split on commas, or, for commands
// (sep " "), into words the way a shell would, with '…' and "…" quoting
// (config.SplitWords, as worker.command is read).
type stringList struct {
	v   *[]string
	sep string
}

// String implements flag.Value.
func (s stringList) String() string {
	if s.v == nil {
		return ""
	}
	return strings.Join(*s.v, s.sep)
}

// Set implements flag.Value.
func (s stringList) Set(v string) error {
	if s.sep == " " {
		words, err := config.SplitWords(v)
		if err != nil {
			return err
		}
		*s.v = words
		return nil
	}
	*s.v = nil
	for _, f := range strings.Split(v, s.sep) {
		if f = strings.TrimSpace(f); f != "" {
			*s.v = append(*s.v, f)
		}
	}
	return nil
}

// parseTool reads "name" or "name:{json args}".
func parseTool(label, v string) (Tool, error) {
	name, args, _ := strings.Cut(v, ":")
	if name == "" {
		return Tool{}, fmt.Errorf("mcpbench: %s tool: empty name (want name or name:{json})", label)
	}
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return Tool{}, fmt.Errorf("mcpbench: %s tool %s: arguments are not valid JSON", label, name)
	}
	return Tool{Label: label, Name: name, Args: json.RawMessage(args)}, nil
}

func parseConfig(args []string, self string, stderr io.Writer) (Config, error) {
	cfg := Config{
		Systems:      slices.Clone(allSystems),
		Concurrency:  []int{1, 16, 64},
		HoldSystems:  []string{sysSDK, sysMCPGate, sysMCPGateTLS},
		SessionUsers: 16,
		Pairs:        slices.Clone(allPairs),
		Worker:       []string{self, "stdio-server"},
		SDKServer:    []string{self, "sdk-server", "--listen", "{addr}"},
		SDKStateless: []string{self, "sdk-server", "--stateless", "--listen", "{addr}"},
		MCPGate:      []string{"bin/mcpgate", "serve", "--listen", "{addr}"},
		Skip:         map[string]string{},
		Variants:     map[string]Variant{},
	}
	fs := flag.NewFlagSet("mcpbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(stringList{&cfg.Systems, ","}, "systems", "systems to run, in order")
	conc := "1,16,64"
	fs.StringVar(&conc, "concurrency", conc, "concurrent sessions for the latency runs; the last is the throughput figure")
	fs.DurationVar(&cfg.Duration, "duration", 4*time.Second, "measured time of each closed-loop run (and of the call run while sessions are held)")
	fs.DurationVar(&cfg.Warmup, "warmup", 500*time.Millisecond, "unmeasured warm-up before each closed-loop run (100ms at most in later rounds)")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "rounds each closed loop and the held calls are split into, the systems taking turns")
	fs.DurationVar(&cfg.Settle, "settle", time.Second, "pause before reading memory after opening idle sessions")
	fs.DurationVar(&cfg.CallTimeout, "call-timeout", 30*time.Second, "timeout of one open or call")
	fs.IntVar(&cfg.Starts, "starts", 50, "session starts measured one after another")
	fs.IntVar(&cfg.Idle, "idle", 100, "idle sessions opened to measure memory per session (0: skip)")
	fs.IntVar(&cfg.Hold, "hold", 1000, "sessions held open at once (0: skip)")
	fs.Var(stringList{&cfg.HoldSystems, ","}, "hold-systems", "systems the hold phase runs on")
	fs.IntVar(&cfg.SessionUsers, "session-users", cfg.SessionUsers, "users the sessions of the closed loops and of the hold phase are spread over, on a system that can act as that many (mcpgate-tls with -user-tokens; the others' sessions are of their one user)")
	trivial := "echo:{\"text\":\"hello\"}"
	fs.StringVar(&trivial, "trivial", trivial, "the trivial tool: name or name:{json arguments}")
	realistic := ""
	fs.StringVar(&realistic, "realistic", "", "the realistic tool, e.g. query:{\"sql\":\"…\"} (empty: none)")
	fs.Var(stringList{&cfg.Worker, " "}, "worker", "the stdio worker command (floor, and behind supergateway)")
	fs.Var(stringList{&cfg.WorkerEnv, " "}, "worker-env", "KEY=value pairs added to the environment of the workers the harness or supergateway start")
	fs.Var(stringList{&cfg.SDKServer, " "}, "sdk-server", "the sdk system's command")
	fs.Var(stringList{&cfg.SDKStateless, " "}, "sdk-stateless", "the sdk-stateless system's command (the go-sdk server in its stateless mode)")
	fs.IntVar(&cfg.ModernClients, "modern-clients", 64, "stateless MCP 2026-07-28 clients at once in the stateless phase (0: skip the phase)")
	modernUsers := "1,16,64"
	fs.StringVar(&modernUsers, "modern-users", modernUsers, "users the stateless phase's clients act as, one closed loop each")
	fs.StringVar(&cfg.UserTokens, "user-tokens", "", "directory of NAME.jwt bearer tokens, one per user NAME, for the TLS system's stateless clients (written by the issuer, waited for with its ready line)")
	fs.Var(stringList{&cfg.MCPGate, " "}, "mcpgate", "mcpgate in localhost mode")
	fs.Var(stringList{&cfg.MCPGateEnv, " "}, "mcpgate-env", "KEY=value pairs added to mcpgate's environment ({addr} etc. expanded)")
	fs.Var(stringList{&cfg.MCPGateTLS, " "}, "mcpgate-tls", "mcpgate with TLS and JWT; {issuer} is the issuer's address (empty: skipped)")
	fs.Var(stringList{&cfg.TLSEnv, " "}, "mcpgate-tls-env", "KEY=value pairs added to the TLS system's environment ({addr}, {issuer} expanded)")
	fs.Var(stringList{&cfg.TLSIssuer, " "}, "tls-issuer", "the test issuer, started first; {issuer} is its address, {addr} the gateway's")
	fs.StringVar(&cfg.TLSCA, "tls-ca", "", "CA certificate (PEM) the TLS system's certificate chains to")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "file the issuer writes the bearer token into; waited for")
	fs.Var(stringList{&cfg.Supergateway, " "}, "supergateway", "the supergateway program (empty: skipped)")
	fs.Var(stringList{&cfg.MCPProxy, " "}, "mcp-proxy", "the mcp-proxy program (empty: skipped)")
	fs.Var(stringList{&cfg.Pairs, ","}, "pairs", "paired comparisons to run: "+strings.Join(allPairs, ",")+" (each skipped with a note when what it needs is missing)")
	fs.Var(stringList{&cfg.Servers, " "}, "mcpgate-servers", "mcpgate configured with a servers list, for the combined pair; {addr} (empty: that pair is skipped)")
	fs.Var(stringList{&cfg.ServersEnv, " "}, "mcpgate-servers-env", "KEY=value pairs added to that gateway's environment")
	fs.StringVar(&cfg.ServersName, "servers-name", "bench", "the server of -mcpgate-servers whose /mcp/NAME the combined /mcp is compared with")
	fs.Var(stringList{&cfg.LocalDaemon, " "}, "local-daemon", "mcpgate serving on a Unix socket, for the local pair; {socket}; mcpgate's environment (empty: that pair is skipped)")
	fs.Var(stringList{&cfg.LocalShim, " "}, "local-shim", "the stdio shim an MCP client starts to reach that socket; {socket}")
	fs.Func("skip", "system=reason: skip a system with a note (repeatable)", func(v string) error {
		name, reason, ok := strings.Cut(v, "=")
		if !ok || reason == "" {
			return errors.New("want system=reason")
		}
		cfg.Skip[name] = reason
		return nil
	})
	fs.Func("variant", "name=system:KEY=value ...: another run of a system with more environment, for an A/B (repeatable; list it in -systems)", func(v string) error {
		name, va, err := parseVariant(v)
		if err != nil {
			return err
		}
		cfg.Variants[name] = va
		return nil
	})
	fs.Func("note", "a line for the report (repeatable)", func(v string) error {
		cfg.Notes = append(cfg.Notes, v)
		return nil
	})
	fs.StringVar(&cfg.Out, "out", "bench/results", "results directory")
	fs.StringVar(&cfg.DB, "db", "", "SQLite demo database to create (if missing) before the systems start, so no worker pays for it")
	fs.Var(stringList{&cfg.Perf, ","}, "perf", "systems to record with perf(1) during each closed loop, into OUT/perf/ (perturbs the figures: for finding hot spots, not for the table)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("mcpbench: unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	cfg.Concurrency, errs = positiveList("-concurrency", conc)
	var more []error
	cfg.ModernUsers, more = positiveList("-modern-users", modernUsers)
	errs = append(errs, more...)
	var err error
	for _, p := range cfg.Pairs {
		if !slices.Contains(allPairs, p) {
			errs = append(errs, fmt.Errorf("mcpbench: -pairs: unknown pair %q (known: %s)", p, strings.Join(allPairs, ",")))
		}
	}
	if cfg.SessionUsers < 1 {
		errs = append(errs, errors.New("mcpbench: -session-users must be positive"))
	}
	for _, s := range cfg.Systems {
		if _, ok := cfg.Variants[s]; !ok && !slices.Contains(allSystems, s) {
			errs = append(errs, fmt.Errorf("mcpbench: -systems: unknown system %q (known: %s)", s, strings.Join(allSystems, ",")))
		}
	}
	if cfg.Trivial, err = parseTool("trivial", trivial); err != nil {
		errs = append(errs, err)
	}
	if realistic != "" {
		t, err := parseTool("realistic", realistic)
		if err != nil {
			errs = append(errs, err)
		}
		cfg.Realistic = &t
	}
	if cfg.Duration <= 0 || cfg.CallTimeout <= 0 || cfg.Rounds < 1 {
		errs = append(errs, errors.New("mcpbench: -duration, -call-timeout and -rounds must be positive"))
	}
	if cfg.ModernClients < 0 {
		errs = append(errs, errors.New("mcpbench: -modern-clients must not be negative"))
	}
	if len(cfg.Worker) == 0 {
		errs = append(errs, errors.New("mcpbench: -worker is empty"))
	}
	return cfg, errors.Join(errs...)
}

// positiveList reads a comma-separated list of positive numbers.
func positiveList(flag, v string) ([]int, []error) {
	var out []int
	var errs []error
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("mcpbench: %s: %q is not a positive number", flag, f))
			continue
		}
		out = append(out, n)
	}
	return out, errs
}
