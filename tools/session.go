package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// sessionToolset is the session family: the session's identity and its
// transaction (commit, abort, refresh).
func sessionToolset() *Toolset {
	return &Toolset{
		Name:        "session",
		Description: "The session's identity and its database transaction.",
		Tools: []Tool{
			{
				Name:        "status",
				Description: "Who this session is and the state of its transaction: user, session id, read-only flag, server identity, database, uncommitted-changes flag and transaction age.",
				Safe:        true,
				ReadOnly:    true,
				Handler:     status,
			},
			{
				Name:        "commit",
				Description: "Commit the session's transaction, making its changes visible to other sessions, and begin a new one.",
				Handler:     commit,
				NeedsDB:     true,
			},
			{
				Name:        "abort",
				Description: "Discard the session's uncommitted changes and begin a new transaction, which also sees other sessions' commits.",
				Safe:        true, // in a read-only session there is nothing to discard
				Destructive: true,
				Idempotent:  true,
				Handler:     abort,
				NeedsDB:     true,
			},
			{
				Name:        "refresh",
				Description: "Begin a new transaction to see other sessions' commits. Refused with kind conflict when there are uncommitted changes: commit or abort first.",
				Safe:        true,
				ReadOnly:    true,
				Handler:     refresh,
				NeedsDB:     true,
			},
		},
	}
}

func status(ctx context.Context, env *Env, _ Args) (*Result, error) {
	server := map[string]any{"name": env.Server.Name, "version": env.Server.Version}
	if env.Server.Title != "" {
		server["title"] = env.Server.Title
	}
	st := map[string]any{
		"user":      env.User,
		"sessionId": env.SessionID,
		"readOnly":  env.ReadOnly,
		"server":    server,
	}
	var b strings.Builder
	fmt.Fprintf(&b, "user: %s\nsession: %s\nread-only: %t\nserver: %s %s", env.User, env.SessionID, env.ReadOnly, env.Server.Name, env.Server.Version)
	if env.Server.Title != "" {
		fmt.Fprintf(&b, " (%s)", env.Server.Title)
	}
	b.WriteByte('\n')
	if env.DB != nil {
		ds, err := env.DB.Status(ctx)
		if err != nil {
			return nil, err
		}
		age := ds.TransactionAge.Round(time.Millisecond)
		st["engine"] = ds.Engine
		st["database"] = ds.Database
		st["uncommittedChanges"] = ds.Uncommitted
		st["transactionAgeSeconds"] = age.Seconds()
		fmt.Fprintf(&b, "database: %s (%s)\nuncommitted changes: %t\ntransaction age: %s\n", ds.Database, ds.Engine, ds.Uncommitted, age)
	}
	return &Result{Text: b.String(), Structured: st}, nil
}

func commit(ctx context.Context, env *Env, _ Args) (*Result, error) {
	if err := env.DB.Commit(ctx); err != nil {
		return nil, err
	}
	return &Result{Text: "committed; a new transaction has begun", Structured: map[string]any{"committed": true}}, nil
}

func abort(ctx context.Context, env *Env, _ Args) (*Result, error) {
	if err := env.DB.Abort(ctx); err != nil {
		return nil, err
	}
	return &Result{Text: "aborted: uncommitted changes discarded; a new transaction has begun", Structured: map[string]any{"aborted": true}}, nil
}

func refresh(ctx context.Context, env *Env, _ Args) (*Result, error) {
	if err := env.DB.Refresh(ctx); err != nil {
		return nil, err
	}
	return &Result{Text: "refreshed: the session now sees every committed change", Structured: map[string]any{"refreshed": true}}, nil
}
