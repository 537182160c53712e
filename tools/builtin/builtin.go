// Package builtin is the built-in worker's program: an MCP server over
// stdin/stdout for one session, serving the toolsets over the configured
// database. `mcpgate worker` and the worker-only binary `mcpgate-worker`
// both run it; it imports only tools/, the SQL drivers and the identity
// variables of package worker, so that a worker-only build links none of the
// gateway's dependencies (TestWorkerBinaryLinksNoGateway in cmd/mcpgate-worker).
package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/mcpgate/mcpgate/workerproto"
)

// Program is what the worker reads and writes.
type Program struct {
	Stdin   io.Reader           // the protocol input
	Stdout  io.Writer           // the protocol output
	Stderr  io.Writer           // the log (warnings and errors only)
	Getenv  func(string) string // the identity and database settings
	Version string              // the server version when the gateway sets none
}

// engines maps a db.Config driver name to its engine.
var engines = map[string]db.Engine{
	db.SQLite:   sqlite.Engine{},
	db.Postgres: postgres.Engine{},
}

// Engine returns the engine of a db.Config driver name.
func Engine(driver string) (db.Engine, bool) {
	e, ok := engines[driver]
	return e, ok
}

// Run is the built-in worker. The gateway starts it with the session's
// identity (package worker's variables) and database settings (package
// db's), or, pre-started (workerproto.EnvPrestarted), with the database
// settings alone, the identity then coming as the first line on stdin
// (workerproto.ReadIdentityLine); it serves until stdin closes or ctx ends. Its log goes to stderr
// only: stdout carries the protocol.
func Run(ctx context.Context, p Program) error {
	logger := slog.New(slog.NewTextHandler(p.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	id, stdin, cfg, prepared, pending, err := identity(ctx, p, logger)
	if err != nil {
		return err
	}
	prestarted := prepared != nil // only a pre-started worker prepares
	if id.User == "" {
		if pending != nil {
			pending.Close()
		}
		return nil // a pre-started worker stopped unclaimed
	}
	if err := confine(p.Getenv, pending); err != nil {
		return err // before reading anything more, or opening the database
	}
	if id.Tools != nil && !id.ReadOnly {
		// A worker that may run no writing tool opens its database
		// read-only too: the engine enforces what the gateway decided.
		onlySafe, err := tools.OnlySafe(id.Toolsets, id.Tools)
		if err != nil {
			return err
		}
		id.ReadOnly = onlySafe
	}
	opts := tools.Options{
		User:          id.User,
		SessionID:     id.SessionID,
		ReadOnly:      id.ReadOnly,
		Toolsets:      id.Toolsets,
		Tools:         id.Tools,
		ServerName:    id.ServerName,
		ServerVersion: id.ServerVersion,
		ServerTitle:   id.ServerTitle,
		Logger:        logger,
	}
	if _, err := tools.Lookup(id.Toolsets); err != nil {
		return err // before touching the database
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = p.Version
	}
	if cfg == nil {
		// With no database settings the worker uses SQLite under ./data,
		// creating it with the demo schema on first use.
		c, err := dbConfig(ctx, p.Getenv)
		if err != nil {
			return err
		}
		cfg = &c
	}
	switch scope := id.Scope; scope {
	case workerproto.ScopeUser:
		txs, err := tools.NewTransactions(ctx, tools.TransactionOptions{
			Instance: id.SessionID,
			Open: func(ctx context.Context) (*db.Session, error) {
				return db.Open(ctx, engines[cfg.Driver], *cfg, id.User, id.ReadOnly)
			},
			Max:         cfg.MaxTransactions,
			IdleTimeout: cfg.TransactionIdleTimeout,
		})
		if err != nil {
			return err
		}
		defer txs.Close()
		opts.Transactions = txs
		raiseProcs(id.Scope, p.Getenv)
	case "", workerproto.ScopeSession:
		session, err := db.Open(ctx, engines[cfg.Driver], *cfg, id.User, id.ReadOnly)
		if err != nil {
			return err
		}
		defer session.Close()
		opts.DB = session
	default:
		return fmt.Errorf("mcpgate worker: %s=%q: want %s or %s (the gateway sets it)", workerproto.EnvScope, scope, workerproto.ScopeSession, workerproto.ScopeUser)
	}
	var srv *mcp.Server
	if prepared != nil {
		srv, err = prepared.Server(opts)
	} else {
		srv, err = tools.NewServer(opts)
	}
	if err != nil {
		return err
	}
	// Start-up leaves garbage that the heap, far below GOGC's 4 MiB
	// minimum goal, would hold until a first collection that an idle
	// session never reaches: returned to the system, it is about 0.5 to
	// 0.8 MiB less private memory per idle worker (measured). It
	// waits for the session's first quiet moment: run as serving starts,
	// the forced collection and scavenge slowed the initialize exchange
	// and first call beside it by about 3 ms (quiet). A pre-started worker
	// did this before its identity came.
	stdout := p.Stdout
	switch {
	case id.Scope == workerproto.ScopeUser:
		q := everyQuiet(userQuiet, freeOSMemory) // see userQuiet
		defer q.stop()
		stdin, stdout = q.reader(stdin), q.writer(stdout)
	case !prestarted:
		q := afterQuiet(freeQuiet, freeOSMemory)
		defer q.stop()
		stdin, stdout = q.reader(stdin), q.writer(stdout)
	}
	if id.Sessions {
		err = tools.ServeSessions(ctx, srv, hostedSession(opts, *cfg), stdin, stdout, logger)
	} else {
		err = tools.Serve(ctx, srv, stdin, stdout)
	}
	if err != nil {
		return fmt.Errorf("mcpgate worker: %w", err)
	}
	return nil
}

// hostedSession readies each session a worker that hosts sessions serves
// (workerproto.Identity.Sessions): what a worker of its own would have,
// the identity's tools over a database connection of its own, as the same
// user with the same rights, with one transaction at a time (commit,
// abort, refresh, status). The sessions share one server
// (tools.SessionHost), built at the first.
func hostedSession(opts tools.Options, cfg db.Config) tools.NewSession {
	opts.Transactions = nil
	host := sync.OnceValues(func() (*tools.SessionHost, error) {
		return tools.NewSessionHost(opts, engines[cfg.Driver].Name())
	})
	return func(ctx context.Context, sessionID string) (func(context.Context, io.Reader, io.Writer) error, func(), error) {
		h, err := host()
		if err != nil {
			return nil, nil, err
		}
		session, err := db.Open(ctx, engines[cfg.Driver], cfg, opts.User, opts.ReadOnly)
		if err != nil {
			return nil, nil, err
		}
		serve := func(ctx context.Context, in io.Reader, out io.Writer) error {
			return h.Serve(ctx, sessionID, session, in, out)
		}
		return serve, func() { session.Close() }, nil
	}
}

// identity returns the worker's identity, the input to serve from, the
// database settings and a server prepared for them. A worker started with
// the session's identity in its environment reads it there. A pre-started
// one (workerproto.EnvPrestarted) first does what depends on no identity (the
// database settings, SQLite's file, the server of every tool the engine
// serves) and then waits for its identity, the first line on stdin; stdin
// closed before it is a clean stop, an empty identity and no error.
func identity(ctx context.Context, p Program, logger *slog.Logger) (workerproto.Identity, io.Reader, *db.Config, *tools.Prepared, *sandbox.Pending, error) {
	switch v := p.Getenv(workerproto.EnvPrestarted); v {
	case "":
		id, err := workerproto.IdentityFromEnv(p.Getenv)
		return id, p.Stdin, nil, nil, nil, err // the database settings once the toolsets are known
	case "true":
	default:
		return workerproto.Identity{}, nil, nil, nil, nil, fmt.Errorf("mcpgate worker: %s=%q: want true (the gateway sets it)", workerproto.EnvPrestarted, v)
	}
	if err := workerproto.CheckPooledEnv(p.Getenv); err != nil {
		return workerproto.Identity{}, nil, nil, nil, nil, err
	}
	cfg, err := dbConfig(ctx, p.Getenv)
	if err != nil {
		return workerproto.Identity{}, nil, nil, nil, nil, err
	}
	// What a session would otherwise wait for and needs no identity: the
	// server with every tool the engine serves registered (Run narrows it
	// to the identity's), the SDK's and SQLite's first-use work (a
	// throwaway session in memory, a private in-memory database; never the
	// session's database, opened only once the identity says how), then
	// the start-up garbage returned to the system while nobody waits (see
	// Run).
	prepared, err := tools.Prepare(engines[cfg.Driver].Name(), logger)
	if err != nil {
		return workerproto.Identity{}, nil, nil, nil, nil, err
	}
	if err := tools.Warm(ctx); err != nil {
		return workerproto.Identity{}, nil, nil, nil, nil, err
	}
	if cfg.Driver == db.SQLite {
		if err := sqlite.Warm(ctx); err != nil {
			return workerproto.Identity{}, nil, nil, nil, nil, err
		}
	}
	// The sandbox made ready (rules, rule set, filter, no_new_privs):
	// a session waits only for its enforcing.
	pending, err := readyConfinement(p.Getenv)
	if err != nil {
		return workerproto.Identity{}, nil, nil, nil, nil, err
	}
	debug.FreeOSMemory()
	in := bufio.NewReaderSize(p.Stdin, workerproto.MaxIdentityLine)
	id, err := workerproto.ReadIdentityLine(in)
	if errors.Is(err, io.EOF) {
		return workerproto.Identity{}, nil, nil, nil, pending, nil
	}
	if err != nil {
		if pending != nil {
			pending.Close()
		}
		return id, nil, nil, nil, nil, fmt.Errorf("mcpgate worker: %w", err)
	}
	// The server reads on from stdin itself (it buffers its own input):
	// first what came in the identity line's read after the line, which
	// is the session's, then stdin. The identity's 64 KiB buffer goes.
	rest, _ := in.Peek(in.Buffered())
	return id, io.MultiReader(bytes.NewReader(bytes.Clone(rest)), p.Stdin), &cfg, prepared, pending, nil
}

// freeOSMemory returns the start-up garbage to the system; a test watches it.
var freeOSMemory = debug.FreeOSMemory

// dbConfig reads the worker's database settings.
func dbConfig(ctx context.Context, getenv func(string) string) (db.Config, error) {
	cfg, err := db.ConfigFromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	if cfg.Driver == db.SQLite {
		// The first worker to find no database file creates it with the
		// demo schema, so that a fresh `make run` shows something real.
		if _, err := sqlite.Ensure(ctx, cfg.DSN); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}
