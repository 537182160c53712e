package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// System names, in the order a run measures and a table shows them.
const (
	sysFloor        = "floor"
	sysSDK          = "sdk"
	sysMCPGate      = "mcpgate"
	sysMCPGateTLS   = "mcpgate-tls"
	sysSupergateway = "supergateway"
	// sysSDKStateless is the go-sdk server in its stateless mode: it runs
	// only the stateless phase (MCP 2026-07-28), the others being about
	// sessions.
	sysSDKStateless = "sdk-stateless"
)

var allSystems = []string{sysFloor, sysSDK, sysMCPGate, sysMCPGateTLS, sysSupergateway, sysSDKStateless}

// modernSystems are the kinds of system the stateless phase runs on.
var modernSystems = []string{sysSDKStateless, sysMCPGate, sysMCPGateTLS}

// Config is one benchmark run's settings. Commands are argv lists; {addr},
// {host} and {port} in a server's arguments become the loopback address the
// harness picked for it.
type Config struct {
	Systems     []string      `json:"systems"`
	Concurrency []int         `json:"concurrency"`
	Duration    time.Duration `json:"duration_ns"` // measured part of each closed loop, all rounds together
	Rounds      int           `json:"rounds"`      // turns each closed loop is split into
	Warmup      time.Duration `json:"warmup_ns"`   // unmeasured start of each closed loop
	Settle      time.Duration `json:"settle_ns"`   // pause before reading memory
	CallTimeout time.Duration `json:"call_timeout_ns"`
	Starts      int           `json:"starts"`       // session starts measured one by one
	Idle        int           `json:"idle"`         // idle sessions for memory per session
	Hold        int           `json:"hold"`         // sessions held open at once
	HoldSystems []string      `json:"hold_systems"` // systems the hold phase runs on
	Trivial     Tool          `json:"trivial"`
	Realistic   *Tool         `json:"realistic,omitempty"`
	// The stateless phase (MCP 2026-07-28): ModernClients clients at once,
	// acting as each of ModernUsers users in turn.
	ModernClients int   `json:"modern_clients"`
	ModernUsers   []int `json:"modern_users"`

	Worker       []string           `json:"worker"`             // the stdio worker
	WorkerEnv    []string           `json:"worker_env"`         // added to the worker's environment
	SDKServer    []string           `json:"sdk_server"`         // the sdk system
	SDKStateless []string           `json:"sdk_stateless"`      // the sdk-stateless system
	MCPGate      []string           `json:"mcpgate"`            // localhost mode
	MCPGateEnv   []string           `json:"mcpgate_env"`        // added to mcpgate's environment (config: MCPGATE_SECTION_KEY)
	MCPGateTLS   []string           `json:"mcpgate_tls"`        // TLS and JWT
	TLSEnv       []string           `json:"tls_env"`            // added to the TLS system's environment
	TLSIssuer    []string           `json:"tls_issuer"`         // the test issuer, started before the TLS system
	TLSCA        string             `json:"tls_ca"`             // PEM file the TLS system's certificate chains to
	TokenFile    string             `json:"token_file"`         // the bearer token the issuer writes
	UserTokens   string             `json:"user_tokens"`        // directory of NAME.jwt tokens, one per user, for the stateless phase
	Supergateway []string           `json:"supergateway"`       // the supergateway program
	Variants     map[string]Variant `json:"variants,omitempty"` // extra systems: a known one with more environment
	Skip         map[string]string  `json:"skip"`               // system → why it is skipped
	Out          string             `json:"out"`                // results directory
	DB           string             `json:"db,omitempty"`       // SQLite demo database, made before any system starts
	Perf         []string           `json:"perf,omitempty"`     // systems recorded with perf(1) during closed loops
	Notes        []string           `json:"notes"`              // free text for the report
}

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
		HoldSystems:  []string{sysSDK, sysMCPGate},
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
	fs.IntVar(&cfg.Rounds, "rounds", 3, "rounds each closed loop is split into, the systems taking turns")
	fs.DurationVar(&cfg.Settle, "settle", time.Second, "pause before reading memory after opening idle sessions")
	fs.DurationVar(&cfg.CallTimeout, "call-timeout", 30*time.Second, "timeout of one open or call")
	fs.IntVar(&cfg.Starts, "starts", 50, "session starts measured one after another")
	fs.IntVar(&cfg.Idle, "idle", 100, "idle sessions opened to measure memory per session (0: skip)")
	fs.IntVar(&cfg.Hold, "hold", 1000, "sessions held open at once (0: skip)")
	fs.Var(stringList{&cfg.HoldSystems, ","}, "hold-systems", "systems the hold phase runs on")
	trivial := "echo:{\"text\":\"hello\"}"
	fs.StringVar(&trivial, "trivial", trivial, "the trivial tool: name or name:{json arguments}")
	realistic := ""
	fs.StringVar(&realistic, "realistic", "", "the realistic tool, e.g. query:{\"sql\":\"…\"} (empty: none)")
	fs.Var(stringList{&cfg.Worker, " "}, "worker", "the stdio worker command (floor, and behind supergateway)")
	fs.Var(stringList{&cfg.WorkerEnv, " "}, "worker-env", "KEY=value pairs added to the environment of the workers the harness or supergateway start")
	fs.Var(stringList{&cfg.SDKServer, " "}, "sdk-server", "the sdk system's command")
	fs.Var(stringList{&cfg.SDKStateless, " "}, "sdk-stateless", "the sdk-stateless system's command (the go-sdk server in its stateless mode)")
	fs.IntVar(&cfg.ModernClients, "modern-clients", 64, "stateless MCP 2026-07-28 clients at once in the stateless phase (0: skip the phase)")
	modernUsers := "1,16"
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

// kind is the system a name runs: itself, or a variant's base.
func (cfg Config) kind(name string) string {
	if v, ok := cfg.Variants[name]; ok {
		return v.Base
	}
	return name
}

// SystemResult is everything measured on one system.
type SystemResult struct {
	Name    string       `json:"name"`
	Skipped string       `json:"skipped,omitempty"` // why the system did not run
	Error   string       `json:"error,omitempty"`   // why it stopped early
	Idle    *IdleResult  `json:"idle,omitempty"`
	Start   *StartResult `json:"start,omitempty"`
	Load    []LoadResult `json:"load,omitempty"`
	Hold    *HoldResult  `json:"hold,omitempty"`
	// Modern is the stateless phase; ModernUsers is how many distinct
	// users the system's clients could act as (runs of more are not made).
	Modern      []ModernResult `json:"modern,omitempty"`
	ModernUsers int            `json:"modern_users,omitempty"`
}

// modern returns the stateless result for a tool label and user count.
func (r *SystemResult) modern(tool string, users int) *ModernResult {
	for i := range r.Modern {
		if r.Modern[i].Tool == tool && r.Modern[i].Users == users {
			return &r.Modern[i]
		}
	}
	return nil
}

// load returns the closed-loop result for a tool label and concurrency.
func (r *SystemResult) load(tool string, n int) *LoadResult {
	for i := range r.Load {
		if r.Load[i].Tool == tool && r.Load[i].Sessions == n {
			return &r.Load[i]
		}
	}
	return nil
}

// Run is one benchmark run: what it ran on, how, and what it found.
type Run struct {
	Started time.Time      `json:"started"`
	Elapsed time.Duration  `json:"elapsed_ns"`
	Machine Machine        `json:"machine"`
	Command string         `json:"command"`
	Config  Config         `json:"config"`
	Systems []SystemResult `json:"systems"`
}

func (r *Run) system(name string) *SystemResult {
	for i := range r.Systems {
		if r.Systems[i].Name == name {
			return &r.Systems[i]
		}
	}
	return nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcpbench: find own executable: %w", err)
	}
	cfg, err := parseConfig(args, self, stderr)
	if err != nil {
		return err
	}
	r := &Run{Started: time.Now().UTC(), Machine: readMachine(), Config: cfg,
		Command: strings.Join(append([]string{"mcpbench", "run"}, args...), " ")}
	logDir := filepath.Join(cfg.Out, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("mcpbench: %w", err)
	}
	if cfg.DB != "" {
		if _, err := sqlite.Ensure(ctx, cfg.DB); err != nil {
			return err
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "0.1.0"}, nil)
	r.Machine.LoadStart = readLoadAvg()
	runAll(ctx, r, client, logDir, stderr)
	r.Machine.LoadEnd = readLoadAvg()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.Elapsed = time.Since(r.Started)
	if err := writeResults(r, cfg.Out); err != nil {
		return err
	}
	fmt.Fprint(stdout, Table(r))
	fmt.Fprintf(stdout, "\nresults in %s (results.json, results.csv, table.md, latency.png); took %s\n",
		cfg.Out, r.Elapsed.Round(time.Second))
	return nil
}

func progress(w io.Writer, system, format string, args ...any) {
	fmt.Fprintf(w, "%s [%s] %s\n", time.Now().Format("15:04:05"), system, fmt.Sprintf(format, args...))
}

// startTarget starts one system and returns it ready for sessions.
func startTarget(ctx context.Context, cfg Config, client *mcp.Client, name, logDir string) (target, error) {
	kind, sdkEnv := cfg.kind(name), []string(nil)
	if v, ok := cfg.Variants[name]; ok {
		switch kind {
		case sysFloor, sysSupergateway:
			cfg.WorkerEnv = append(slices.Clone(cfg.WorkerEnv), v.Env...)
		case sysMCPGate:
			cfg.MCPGateEnv = append(slices.Clone(cfg.MCPGateEnv), v.Env...)
		case sysMCPGateTLS:
			cfg.TLSEnv = append(slices.Clone(cfg.TLSEnv), v.Env...)
		case sysSDK, sysSDKStateless:
			sdkEnv = v.Env
		}
	}
	env := os.Environ()
	switch kind {
	case sysFloor:
		logf, err := os.Create(filepath.Join(logDir, name+".log"))
		if err != nil {
			return nil, err
		}
		// The log file stays open for the run; the process exit closes it.
		return &stdioTarget{client: client, argv: cfg.Worker, env: sessionEnv(env, cfg.WorkerEnv),
			stderr: logf, procfs: pfs()}, nil
	case sysSDK, sysSDKStateless, sysMCPGate:
		argv, extra := cfg.SDKServer, sdkEnv
		switch kind {
		case sysSDKStateless:
			argv = cfg.SDKStateless
		case sysMCPGate:
			argv, extra = cfg.MCPGate, cfg.MCPGateEnv
		}
		if len(argv) == 0 {
			return nil, errors.New("mcpbench: no command given")
		}
		// The worker environment is not for these: the sdk server is no
		// worker, and mcpgate gives its workers an environment of its own.
		p, endpoint, err := startHTTP(ctx, name, "", nil, argv, sessionEnv(env, extra), logDir, "http")
		if err != nil {
			return nil, err
		}
		return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, procfs: pfs(), perUserWorkers: kind == sysMCPGate}, nil
	case sysMCPGateTLS:
		return startTLS(ctx, cfg, client, name, env, logDir)
	case sysSupergateway:
		if len(cfg.Supergateway) == 0 {
			return nil, errors.New("mcpbench: no -supergateway program given")
		}
		// Stateful mode: one worker per session, as mcpgate does (stateless
		// would start a worker per request).
		argv := append(slices.Clone(cfg.Supergateway),
			"--stdio", shellQuote(cfg.Worker),
			"--outputTransport", "streamableHttp", "--stateful",
			"--port", "{port}", "--logLevel", "none")
		p, endpoint, err := startHTTP(ctx, name, "", nil, argv, sessionEnv(env, cfg.WorkerEnv), logDir, "http")
		if err != nil {
			return nil, err
		}
		return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, procfs: pfs()}, nil
	}
	return nil, fmt.Errorf("mcpbench: unknown system %q", kind)
}

// startTLS starts the test issuer, waits for its token, then starts mcpgate
// with TLS and auth against it. Both addresses are picked first: the
// issuer's tokens name the gateway's resource URI as their audience.
func startTLS(ctx context.Context, cfg Config, client *mcp.Client, name string, env []string, logDir string) (target, error) {
	if len(cfg.MCPGateTLS) == 0 || len(cfg.TLSIssuer) == 0 || cfg.TokenFile == "" || cfg.TLSCA == "" {
		return nil, errors.New("mcpbench: the TLS system needs -mcpgate-tls, -tls-issuer, -token-file and -tls-ca")
	}
	gwAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	issAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	v := addrVars(gwAddr)
	v["issuer"] = issAddr
	_ = os.Remove(v.expand([]string{cfg.TokenFile})[0])
	iss, err := startProc(name+"-issuer", v.expand(cfg.TLSIssuer), env, filepath.Join(logDir, name+"-issuer.log"))
	if err != nil {
		return nil, err
	}
	tok, err := waitFile(ctx, iss, v.expand([]string{cfg.TokenFile})[0], 30*time.Second)
	if err != nil {
		_ = iss.stop(time.Second)
		return nil, err
	}
	var users, userTokens []string
	if cfg.UserTokens != "" {
		// The issuer says "ready" once every token is written.
		if _, err := waitLog(ctx, iss, "ready ", 30*time.Second); err != nil {
			_ = iss.stop(time.Second)
			return nil, err
		}
		if users, userTokens, err = readUserTokens(v.expand([]string{cfg.UserTokens})[0]); err != nil {
			_ = iss.stop(time.Second)
			return nil, err
		}
	}
	pem, err := os.ReadFile(cfg.TLSCA)
	if err != nil {
		_ = iss.stop(time.Second)
		return nil, fmt.Errorf("mcpbench: -tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		_ = iss.stop(time.Second)
		return nil, fmt.Errorf("mcpbench: -tls-ca %s holds no PEM certificate", cfg.TLSCA)
	}
	p, endpoint, err := startHTTP(ctx, name, gwAddr, vars{"issuer": issAddr}, cfg.MCPGateTLS, sessionEnv(env, cfg.TLSEnv), logDir, "https")
	if err != nil {
		_ = iss.stop(time.Second)
		return nil, err
	}
	return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, helpers: []*proc{iss}, procfs: pfs(),
		tls: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, token: string(tok),
		users: users, userTokens: userTokens, perUserWorkers: true}, nil
}

func pfs() ProcFS { return ProcFS{Root: "/proc"} }

// live is a started system and the bench driving it.
type live struct {
	res *SystemResult
	b   *bench
}

// runAll starts every system, then runs each phase on every system before
// the next phase, so that a change in the machine's background load during
// the run (it is shared) spreads over all systems instead of landing on one.
// A phase that fails on a system leaves its other figures in place.
func runAll(ctx context.Context, r *Run, client *mcp.Client, logDir string, stderr io.Writer) {
	cfg := r.Config
	r.Systems = make([]SystemResult, len(cfg.Systems))
	var systems, modern []live // sessions' phases, the stateless phase
	for i, name := range cfg.Systems {
		res := &r.Systems[i]
		*res = SystemResult{Name: name, Skipped: cfg.Skip[name]}
		if res.Skipped != "" {
			progress(stderr, name, "skipped: %s", res.Skipped)
			continue
		}
		t, err := startTarget(ctx, cfg, client, name, logDir)
		if err != nil {
			res.Error = err.Error()
			progress(stderr, name, "failed to start: %v", err)
			continue
		}
		defer t.stop()
		progress(stderr, name, "started")
		b := &bench{cfg: cfg, t: t, trivial: cfg.Trivial}
		if slices.Contains(cfg.Perf, name) {
			b.profile = perfRecorder(filepath.Join(cfg.Out, "perf"), name, stderr)
		}
		if mt, ok := t.(modernTarget); ok && slices.Contains(modernSystems, cfg.kind(name)) {
			res.ModernUsers = len(mt.modernUsers())
			modern = append(modern, live{res: res, b: b})
		}
		if cfg.kind(name) != sysSDKStateless {
			systems = append(systems, live{res: res, b: b})
		}
	}
	fail := func(res *SystemResult, err error) {
		if err != nil && res.Error == "" {
			res.Error = err.Error()
		}
	}

	if cfg.Idle > 0 {
		for _, s := range systems {
			idle, err := s.b.idle(ctx, cfg.Idle)
			s.res.Idle = &idle
			fail(s.res, err)
			progress(stderr, s.res.Name, "idle: %d/%d sessions, %.2f MiB RSS (%.2f MiB PSS) each %s",
				idle.Opened, idle.Sessions, mib(idle.PerSessionRSS), mib(idle.PerSessionPSS), errNote(idle.FirstError))
		}
	}
	if cfg.Starts > 0 {
		for _, s := range systems {
			st := s.b.starts(ctx, cfg.Starts)
			s.res.Start = &st
			progress(stderr, s.res.Name, "session start: p50 %s p99 %s (%d errors) %s",
				fmtDur(st.Latency.P50), fmtDur(st.Latency.P99), st.Errors, errNote(st.FirstError))
		}
	}
	tools := []Tool{cfg.Trivial}
	if cfg.Realistic != nil {
		tools = append(tools, *cfg.Realistic)
	}
	// Each closed loop runs in rounds, the systems taking turns; later
	// rounds need only a short warm-up, their sessions being warm already.
	per := cfg.Duration / time.Duration(cfg.Rounds)
	for _, tool := range tools {
		for _, n := range cfg.Concurrency {
			runs := make([]*loadRun, len(systems))
			for i, s := range systems {
				runs[i] = s.b.startLoad(ctx, tool, n)
			}
			for r := range cfg.Rounds {
				warm := cfg.Warmup
				if r > 0 {
					warm = min(warm, 100*time.Millisecond)
				}
				for i, s := range systems {
					s.b.round(ctx, runs[i], warm, per)
				}
			}
			for i, s := range systems {
				lr := s.b.finishLoad(runs[i])
				s.res.Load = append(s.res.Load, lr)
				progress(stderr, s.res.Name, "%s %s @%d: p50 %s p99 %s, %.0f calls/s (%d errors) %s",
					tool.Label, tool.Name, n, fmtDur(lr.Latency.P50), fmtDur(lr.Latency.P99), lr.CallsPerSec, lr.Errors, errNote(lr.FirstError))
			}
		}
	}
	if cfg.Hold > 0 {
		for _, s := range systems {
			if !slices.Contains(cfg.HoldSystems, s.res.Name) {
				continue
			}
			h, err := s.b.hold(ctx, cfg.Hold)
			s.res.Hold = &h
			fail(s.res, err)
			progress(stderr, s.res.Name, "hold: %d opened, %d answered of %d in %s; %.0f MiB RSS, %.0f MiB PSS; call p50 %s %s",
				h.Opened, h.Answered, h.Sessions, h.OpenTime.Round(time.Millisecond), mib(h.Memory.RSS), mib(h.Memory.PSS),
				fmtDur(h.Call.P50), errNote(h.FirstError))
		}
	}
	// Last: the per-user workers it starts outlive it (until their idle
	// timeout), and would count in the memory figures of the phases above.
	if cfg.ModernClients > 0 {
		runModern(ctx, cfg, modern, tools, per, stderr)
	}
}

// runModern is the stateless phase: for each tool and user count, a closed
// loop of cfg.ModernClients stateless 2026-07-28 clients on every system
// that can act as that many users, in rounds taken in turn as in the load
// phase.
func runModern(ctx context.Context, cfg Config, systems []live, tools []Tool, per time.Duration, stderr io.Writer) {
	n := cfg.ModernClients
	for _, tool := range tools {
		for _, users := range cfg.ModernUsers {
			runs := make([]*loadRun, len(systems))
			for i, s := range systems {
				mt := s.b.t.(modernTarget)
				if modernUsersOf(mt, users) == nil {
					continue
				}
				runs[i] = s.b.startModern(ctx, mt, tool, n, users)
			}
			for r := range cfg.Rounds {
				warm := cfg.Warmup
				if r > 0 {
					warm = min(warm, 100*time.Millisecond)
				}
				for i, s := range systems {
					if runs[i] != nil {
						s.b.round(ctx, runs[i], warm, per)
					}
				}
			}
			for i, s := range systems {
				if runs[i] == nil {
					continue
				}
				census := false
				if ht, ok := s.b.t.(*httpTarget); ok {
					census = ht.perUserWorkers
				}
				mr := s.b.finishModern(runs[i], s.b.t.(modernTarget), users, census)
				s.res.Modern = append(s.res.Modern, mr)
				workers := ""
				if c := mr.Workers; c != nil {
					workers = fmt.Sprintf("; %d per-user workers of %d users, %.2f MiB RSS (%.2f MiB PSS) per user",
						c.Workers, c.Users, mib(c.PerUserRSS), mib(c.PerUserPSS))
				}
				progress(stderr, s.res.Name, "2026-07-28 %s %s @%d, %d users: p50 %s p99 %s, %.0f calls/s (%d errors)%s %s",
					tool.Label, tool.Name, n, users, fmtDur(mr.Latency.P50), fmtDur(mr.Latency.P99), mr.CallsPerSec, mr.Errors,
					workers, errNote(mr.FirstError))
			}
		}
	}
}

func errNote(s string) string {
	if s == "" {
		return ""
	}
	return "— first error: " + s
}
