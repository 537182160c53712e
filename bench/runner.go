package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// System names, in the order a run measures and a table shows them.
const (
	sysFloor        = "floor"
	sysSDK          = "sdk"
	sysMCPGate      = "mcpgate"
	sysMCPGateTLS   = "mcpgate-tls"
	sysSupergateway = "supergateway"
	// sysMCPProxy is mcp-proxy (npm): one stdio worker shared by every
	// client, serving both protocol generations.
	sysMCPProxy = "mcp-proxy"
	// sysSDKStateless is the go-sdk server in its stateless mode: it runs
	// only the stateless phase (MCP 2026-07-28), the others being about
	// sessions.
	sysSDKStateless = "sdk-stateless"
)

var allSystems = []string{sysFloor, sysSDK, sysMCPGate, sysMCPGateTLS, sysSupergateway, sysMCPProxy, sysSDKStateless}

// modernSystems are the kinds of system the stateless phase runs on.
var modernSystems = []string{sysSDKStateless, sysMCPGate, sysMCPGateTLS, sysMCPProxy}

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
	// SessionUsers: the sessions of the closed loops and the held ones are
	// spread over this many users on a system that can act as them
	// (mcpgate-tls given -user-tokens).
	SessionUsers int   `json:"session_users"`
	Trivial      Tool  `json:"trivial"`
	Realistic    *Tool `json:"realistic,omitempty"`
	// The stateless phase (MCP 2026-07-28): ModernClients clients at once,
	// acting as each of ModernUsers users in turn.
	ModernClients int   `json:"modern_clients"`
	ModernUsers   []int `json:"modern_users"`

	Worker       []string `json:"worker"`        // the stdio worker
	WorkerEnv    []string `json:"worker_env"`    // added to the worker's environment
	SDKServer    []string `json:"sdk_server"`    // the sdk system
	SDKStateless []string `json:"sdk_stateless"` // the sdk-stateless system
	MCPGate      []string `json:"mcpgate"`       // localhost mode
	MCPGateEnv   []string `json:"mcpgate_env"`   // added to mcpgate's environment (config: MCPGATE_SECTION_KEY)
	MCPGateTLS   []string `json:"mcpgate_tls"`   // TLS and JWT
	TLSEnv       []string `json:"tls_env"`       // added to the TLS system's environment
	TLSIssuer    []string `json:"tls_issuer"`    // the test issuer, started before the TLS system
	TLSCA        string   `json:"tls_ca"`        // PEM file the TLS system's certificate chains to
	TokenFile    string   `json:"token_file"`    // the bearer token the issuer writes
	UserTokens   string   `json:"user_tokens"`   // directory of NAME.jwt tokens, one per user, for the stateless phase
	Supergateway []string `json:"supergateway"`  // the supergateway program
	MCPProxy     []string `json:"mcp_proxy"`     // the mcp-proxy program
	// The paired comparisons (pairs.go): which run, and what the
	// combined and local ones start.
	Pairs       []string           `json:"pairs"`
	Servers     []string           `json:"servers,omitempty"`      // mcpgate with a servers list ({addr})
	ServersEnv  []string           `json:"servers_env,omitempty"`  // added to its environment
	ServersName string             `json:"servers_name,omitempty"` // the server /mcp/NAME serves and /mcp combines
	LocalDaemon []string           `json:"local_daemon,omitempty"` // mcpgate on a Unix socket ({socket}), mcpgate's environment
	LocalShim   []string           `json:"local_shim,omitempty"`   // the stdio shim to it ({socket})
	Variants    map[string]Variant `json:"variants,omitempty"`     // extra systems: a known one with more environment
	Skip        map[string]string  `json:"skip"`                   // system → why it is skipped
	Out         string             `json:"out"`                    // results directory
	DB          string             `json:"db,omitempty"`           // SQLite demo database, made before any system starts
	Perf        []string           `json:"perf,omitempty"`         // systems recorded with perf(1) during closed loops
	Notes       []string           `json:"notes"`                  // free text for the report
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
	// SessionUsers is how many users the closed loops' sessions act as.
	SessionUsers int `json:"session_users,omitempty"`
	// WarmStart is session start while the same user holds a session
	// already (whose worker a new session could share).
	WarmStart *StartResult `json:"warm_start,omitempty"`
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
	Pairs   []PairResult   `json:"pairs,omitempty"`
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
