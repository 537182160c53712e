package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/mcpgate/mcpgate/worker"
)

func init() {
	commands["worker"] = runWorker
}

// engines maps a db.Config driver name to its engine.
var engines = map[string]db.Engine{
	db.SQLite:   sqlite.Engine{},
	db.Postgres: postgres.Engine{},
}

// runWorker is `mcpgate worker`: the built-in worker, an MCP server over
// stdin/stdout for one session. The gateway starts it with the session's
// identity (package worker's variables) and database settings (package
// db's); it serves until stdin closes or ctx ends. Its log goes to stderr
// only: stdout carries the protocol.
func runWorker(ctx context.Context, m *Main, args []string) error {
	if len(args) > 0 {
		fmt.Fprintf(m.Stderr, "mcpgate worker takes no arguments (got %q); the gateway configures it through the environment\n", args)
		return errUsage
	}
	logger := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	id, err := worker.IdentityFromEnv(m.Getenv)
	if err != nil {
		return err
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
		opts.ServerVersion = Version
	}
	// With no database settings the worker uses SQLite under ./data,
	// creating it with the demo schema on first use.
	cfg, err := dbConfig(ctx, m.Getenv)
	if err != nil {
		return err
	}
	switch scope := m.Getenv(worker.EnvScope); scope {
	case worker.ScopeUser:
		txs, err := tools.NewTransactions(ctx, tools.TransactionOptions{
			Instance: id.SessionID,
			Open: func(ctx context.Context) (*db.Session, error) {
				return db.Open(ctx, engines[cfg.Driver], cfg, id.User, id.ReadOnly)
			},
			Max:         cfg.MaxTransactions,
			IdleTimeout: cfg.TransactionIdleTimeout,
		})
		if err != nil {
			return err
		}
		defer txs.Close()
		opts.Transactions = txs
	case "", worker.ScopeSession:
		session, err := db.Open(ctx, engines[cfg.Driver], cfg, id.User, id.ReadOnly)
		if err != nil {
			return err
		}
		defer session.Close()
		opts.DB = session
	default:
		return fmt.Errorf("mcpgate worker: %s=%q: want %s or %s (the gateway sets it)", worker.EnvScope, scope, worker.ScopeSession, worker.ScopeUser)
	}
	srv, err := tools.NewServer(opts)
	if err != nil {
		return err
	}
	if err := tools.Serve(ctx, srv, m.Stdin, m.Stdout); err != nil {
		return fmt.Errorf("mcpgate worker: %w", err)
	}
	return nil
}

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
