// Package tools is the worker's side of mcpgate: the toolset framework and
// the built-in toolsets, served by `mcpgate worker` as an MCP server over
// stdio (github.com/modelcontextprotocol/go-sdk).
//
// A toolset registers its tools on the worker's mcp.Server. Every input
// schema is closed, arguments are checked here rather than by the SDK (whose
// typed AddTool reports a schema failure without a machine-readable kind),
// and every failure is an isError result whose structuredContent.error.kind
// says what went wrong.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProductName is the default serverInfo.name.
const ProductName = "mcpgate"

// DefaultMaxResultBytes caps the text of a tool result.
const DefaultMaxResultBytes = 256 << 10

// Options configure a worker's MCP server. The zero value serves every
// built-in toolset that needs no database, read-write, as "mcpgate".
type Options struct {
	User      string // the user the session runs as
	SessionID string // the gateway's MCP session id
	ReadOnly  bool   // register only read-only-safe tools

	// Toolsets names the built-in toolsets to serve; empty means every one.
	Toolsets []string
	// Tools, when not nil, is the only tools to register (the caller's
	// policy grant, workerproto.Identity.Tools); empty registers none.
	Tools []string

	// Server identity (MCP 2025-11-25 serverInfo). Name and Version default
	// to the product's; Title is the operator's label for this instance and
	// is left out of serverInfo when empty, so a client falls back to Name.
	ServerName, ServerVersion, ServerTitle string

	// DB is the session's database; nil serves only the tools that need
	// none, and naming a database toolset is then an error.
	DB *db.Session

	// Transactions, when set, makes this a per-user worker (MCP 2026-07-28,
	// MCPGATE_WORKER_SCOPE=user): DB is unused, begin mints transaction
	// handles, the database tools take an optional transaction argument,
	// and a call without one runs in a transaction of its own. Nil is a
	// session worker, exactly as before handles.
	Transactions *Transactions

	// MaxResultBytes caps a result's text; 0 means DefaultMaxResultBytes.
	MaxResultBytes int

	// Logger receives the worker's own log lines (stderr in mcpgate
	// worker, never stdout, which carries the protocol); nil discards.
	Logger *slog.Logger
}

// Env is what a tool handler may use: the session's identity and database.
type Env struct {
	User      string
	SessionID string
	ReadOnly  bool
	Server    mcp.Implementation
	DB        *db.Session // nil when the worker has no database

	// In a per-user worker: the call's transaction handle, or "" for a call
	// in a transaction of its own, which commits a write when it succeeds
	// (Autocommit).
	Transaction string
	Autocommit  bool
	txs         *Transactions
	// holder is the key the call proved (workerproto.MetaHolder), which
	// binds the handles it begins and must match the one it names.
	holder string
}

// forCall returns the Env a call of t runs with, and what to do after it.
// In a session worker that is env itself. In a per-user worker a call
// naming a handle runs in its transaction; any other database call gets a
// connection with a fresh transaction of its own.
func (env *Env) forCall(ctx context.Context, t *Tool, a Args) (*Env, func(), error) {
	x := env.txs
	if x == nil || !t.takesHandle() {
		return env, func() {}, nil
	}
	c := *env
	if h := a.String(handleParam.Name); h != "" {
		tx, err := x.acquire(ctx, h, c.holder)
		if err != nil {
			return nil, nil, err
		}
		c.DB, c.Transaction = tx.s, h
		return &c, func() { x.release(tx) }, nil
	}
	s, err := x.take(ctx)
	if err != nil {
		return nil, nil, err
	}
	c.DB, c.Autocommit = s, true
	return &c, func() { x.put(s) }, nil
}

// NewServer returns the worker's MCP server with the selected toolsets
// registered. A read-only server never registers a gated tool.
func NewServer(opts Options) (*mcp.Server, error) {
	sets, err := Lookup(opts.Toolsets)
	if err != nil {
		return nil, err
	}
	return newServer(opts, sets)
}

// newServer serves the given toolsets; tests pass toolsets of their own.
func newServer(opts Options, sets []*Toolset) (*mcp.Server, error) {
	impl := implementation(opts)
	srv, logger := newMCPServer(&impl, opts.Logger)
	env := &Env{User: opts.User, SessionID: opts.SessionID, ReadOnly: opts.ReadOnly, Server: impl, DB: opts.DB, txs: opts.Transactions}
	maxBytes := opts.MaxResultBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResultBytes
	}

	engine, hasDB := "", opts.DB != nil || opts.Transactions != nil
	switch {
	case opts.Transactions != nil:
		engine = opts.Transactions.Engine()
	case opts.DB != nil:
		engine = opts.DB.Engine()
	}
	for _, ts := range sets {
		if !hasDB && len(opts.Toolsets) > 0 && !slices.ContainsFunc(ts.Tools, func(t Tool) bool { return !t.NeedsDB }) {
			return nil, fmt.Errorf("tools: toolset %q needs a database, and the worker has none (set %s)", ts.Name, db.EnvDSN)
		}
		for i := range ts.Tools {
			t := &ts.Tools[i]
			if !granted(t, opts) || !hostServes(t, hasDB, engine, opts.Transactions != nil) {
				continue
			}
			if opts.Transactions != nil {
				t = t.withHandle()
			}
			srv.AddTool(t.mcpTool(), handler(t, fixedEnv(env), maxBytes, logger))
		}
	}
	return srv, nil
}

// implementation is the server's name, version and title.
func implementation(opts Options) mcp.Implementation {
	impl := mcp.Implementation{Name: opts.ServerName, Version: opts.ServerVersion, Title: opts.ServerTitle}
	if impl.Name == "" {
		impl.Name = ProductName
	}
	if impl.Version == "" {
		impl.Version = moduleVersion()
	}
	return impl
}

// granted reports whether the session's identity allows t: its read-only
// flag and its tool grant.
func granted(t *Tool, opts Options) bool {
	return (!opts.ReadOnly || t.Safe) && (opts.Tools == nil || slices.Contains(opts.Tools, t.Name))
}

// hostServes reports whether a worker serves t at all: a worker without a
// database serves the tools that need none, an engine its own tools, and
// a per-user worker (transactions) its own.
func hostServes(t *Tool, hasDB bool, engine string, perUser bool) bool {
	return (!t.NeedsDB || hasDB) && (len(t.Engines) == 0 || slices.Contains(t.Engines, engine)) && (!t.PerUser || perUser)
}

// sameToolsets reports whether a and b name the same toolsets in the same
// order (Lookup builds them anew each time).
func sameToolsets(a, b []*Toolset) bool {
	return slices.EqualFunc(a, b, func(x, y *Toolset) bool { return x.Name == y.Name })
}

// Prepared is a session worker's server built before its session's
// identity is known (a pre-started worker): every tool of every built-in
// toolset that the worker's database engine serves, registered with the
// SDK, which is most of a server's cost. Server then makes it the
// session's, removing every tool the identity does not allow.
type Prepared struct {
	engine string
	logger *slog.Logger
	sets   []*Toolset
	tools  []*Tool
	impl   *mcp.Implementation // the server's, filled in by Server
	env    *Env                // the handlers', filled in by Server
	srv    *mcp.Server
	used   bool
}

// Prepare builds the server of a session worker (one database session, no
// transactions) over engine, logging to logger.
func Prepare(engine string, logger *slog.Logger) (*Prepared, error) {
	sets, err := Lookup(nil)
	if err != nil {
		return nil, err
	}
	p := &Prepared{engine: engine, logger: logger, sets: sets, impl: &mcp.Implementation{}, env: &Env{}}
	p.srv, logger = newMCPServer(p.impl, logger)
	names := map[string]bool{}
	for _, ts := range sets {
		for i := range ts.Tools {
			t := &ts.Tools[i]
			if names[t.Name] {
				// Server removes tools by name.
				return nil, fmt.Errorf("tools: tool %q is in two toolsets", t.Name)
			}
			names[t.Name] = true
			if hostServes(t, true, engine, false) {
				p.tools = append(p.tools, t)
				p.srv.AddTool(t.mcpTool(), handler(t, fixedEnv(p.env), DefaultMaxResultBytes, logger))
			}
		}
	}
	return p, nil
}

// Server returns the session's server: the prepared one with the tools
// opts does not allow removed, so that it answers exactly as
// NewServer(opts) would. Options it was not prepared for (other
// toolsets, a database of another engine or none, transactions, another
// result cap or logger), and any call after the first, get a server
// NewServer builds.
func (p *Prepared) Server(opts Options) (*mcp.Server, error) {
	sets, err := Lookup(opts.Toolsets)
	if err != nil {
		return nil, err
	}
	if p.used || opts.DB == nil || opts.DB.Engine() != p.engine || opts.Transactions != nil ||
		opts.MaxResultBytes != 0 || opts.Logger != p.logger || !sameToolsets(sets, p.sets) {
		return newServer(opts, sets)
	}
	p.used = true
	*p.impl = implementation(opts)
	*p.env = Env{User: opts.User, SessionID: opts.SessionID, ReadOnly: opts.ReadOnly, Server: *p.impl, DB: opts.DB}
	var hidden []string
	for _, t := range p.tools {
		if !granted(t, opts) {
			hidden = append(hidden, t.Name)
		}
	}
	p.srv.RemoveTools(hidden...)
	return p.srv, nil
}

// mcpTool describes the tool for tools/list.
func (t *Tool) mcpTool() *mcp.Tool {
	destructive := t.Destructive && !t.ReadOnly
	openWorld := false // every tool acts on the session's own database
	return &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: t.InputSchema(),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.Idempotent || t.ReadOnly,
			OpenWorldHint:   &openWorld,
		},
	}
}

// handler adapts a Tool to the SDK: it checks the arguments, runs the tool,
// turns any failure into an isError result with a kind, caps the text, every
// string of the structured content and every error message (cap.go), and
// keeps a panicking handler from taking the worker down.
func handler(t *Tool, envOf func(*mcp.CallToolRequest) *Env, maxBytes int, logger *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		defer func() {
			if r := recover(); r != nil {
				logger.Error("tools: handler panicked", "tool", t.Name, "panic", r, "stack", string(debug.Stack()))
				res = errorResult(Errorf(KindOther, "%s failed with an internal error; the worker log has the details", t.Name))
			}
		}()
		var raw json.RawMessage
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		args, err := t.checkArgs(raw)
		if err != nil {
			return errorResult(err), nil
		}
		env := envOf(req)
		if env == nil {
			return errorResult(Errorf(KindOther, "%s: the session is not open", t.Name)), nil
		}
		callEnv, done, err := env.withHolder(req).forCall(ctx, t, args)
		if err != nil {
			return errorResult(err), nil
		}
		defer done()
		out, err := t.Handler(ctx, callEnv, args)
		if err != nil {
			te := AsError(err)
			if te.Kind == KindOther && te.Err != nil && te.Code == "" { // not a timeout or a cancel
				logger.Warn("tools: tool failed", "tool", t.Name, "error", te.Err)
			}
			return errorResult(te), nil
		}
		if out == nil {
			out = &Result{}
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: capText(out.Text, maxBytes)}},
			StructuredContent: capResult(out.Structured),
		}, nil
	}
}

// errorResult is a tool execution error (MCP 2025-11-25 §Tools, error
// handling): isError, the message as text, and the kind as structured
// content.
func errorResult(err error) *mcp.CallToolResult {
	te := AsError(err)
	msg := capMessage(te.Message)
	e := map[string]any{"kind": string(te.Kind), "message": msg}
	if te.Code != "" {
		e["code"] = te.Code
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: msg}},
		StructuredContent: map[string]any{"error": e},
	}
}

// capText cuts text to at most max bytes, on a line boundary where one is
// near, and says how much there was.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	if nl := lastNewline(s[:cut]); nl > limit/2 {
		cut = nl
	}
	return s[:cut] + fmt.Sprintf("\n… output truncated: showing %d of %d bytes", cut, len(s))
}

func lastNewline(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

// moduleVersion is the version the binary was built as, for a server whose
// operator named none.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// newMCPServer is the go-sdk server of a worker: impl, tools only (no
// logging capability is advertised, because the worker sends no log
// notifications), logging to logger or nowhere, with what it sends during
// a call marked with the call's id; it returns the logger used.
func newMCPServer(impl *mcp.Implementation, logger *slog.Logger) (*mcp.Server, *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Logger:       logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	MarkCalls(srv) // what the worker sends during a call names the call
	return srv, logger
}

// fixedEnv is the Env of a server's one session.
func fixedEnv(env *Env) func(*mcp.CallToolRequest) *Env {
	return func(*mcp.CallToolRequest) *Env { return env }
}
