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
				Name: "begin",
				Description: "Begin a database transaction and return its handle. Pass the handle as the transaction argument of other tools to run them in it; commit or abort ends it. " +
					"An idle transaction is rolled back after the worker's transaction idle timeout. Without a handle, each call runs in a transaction of its own and a write commits when the call succeeds.",
				Safe:     true, // a read-only worker's transaction is read-only
				ReadOnly: true,
				NeedsDB:  true,
				Handle:   HandleNone,
				PerUser:  true,
				Handler:  begin,
			},
			{
				Name:               "status",
				Description:        "Who this session is and the state of its transaction: user, session id, read-only flag, server identity, database, whether a transaction is open, uncommitted-changes flag and transaction age. A transaction begins at the session's first statement; one without changes ends after a short idle time.",
				PerUserDescription: "Who this worker serves and the state of a transaction: user, worker instance id, read-only flag, server identity, database, and, with a transaction handle, its uncommitted-changes flag and age.",
				Safe:               true,
				ReadOnly:           true,
				Handle:             HandleOptional,
				Handler:            status,
			},
			{
				Name:               "commit",
				Description:        "Commit the session's transaction, making its changes visible to other sessions; the next statement begins a new one.",
				PerUserDescription: "Commit the transaction named by the handle, making its changes visible to everyone, and end the handle.",
				Handle:             HandleRequired,
				Handler:            commit,
				NeedsDB:            true,
			},
			{
				Name:               "abort",
				Description:        "Discard the session's uncommitted changes; the next statement begins a new transaction, which also sees other sessions' commits.",
				PerUserDescription: "Discard the uncommitted changes of the transaction named by the handle and end the handle.",
				Safe:               true, // in a read-only session there is nothing to discard
				Destructive:        true,
				Idempotent:         true,
				Handle:             HandleRequired,
				Handler:            abort,
				NeedsDB:            true,
			},
			{
				Name:               "refresh",
				Description:        "End the transaction so that the next statement sees other sessions' commits. Refused with kind conflict when there are uncommitted changes: commit or abort first.",
				PerUserDescription: "Restart the transaction named by the handle so that it sees every commit made since it began; the handle stays. Refused with kind conflict when it has uncommitted changes: commit or abort first.",
				Safe:               true,
				ReadOnly:           true,
				Handle:             HandleRequired,
				Handler:            refresh,
				NeedsDB:            true,
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
		st["transactionOpen"] = ds.Transaction
		st["uncommittedChanges"] = ds.Uncommitted
		st["transactionAgeSeconds"] = age.Seconds()
		switch {
		case env.txs != nil && env.Transaction == "":
			// A call without a handle has a transaction of its own: it has
			// no changes and no age worth reporting.
			delete(st, "transactionOpen")
			delete(st, "uncommittedChanges")
			delete(st, "transactionAgeSeconds")
			fmt.Fprintf(&b, "database: %s (%s)\ntransaction: none (pass a handle from begin to see one)\n", ds.Database, ds.Engine)
		case !ds.Transaction:
			fmt.Fprintf(&b, "database: %s (%s)\ntransaction: none open (the next statement begins one)\nuncommitted changes: false\n", ds.Database, ds.Engine)
		default:
			fmt.Fprintf(&b, "database: %s (%s)\ntransaction: open\nuncommitted changes: %t\ntransaction age: %s\n", ds.Database, ds.Engine, ds.Uncommitted, age)
		}
		if env.Transaction != "" {
			st["transaction"] = env.Transaction
			fmt.Fprintf(&b, "transaction: %s\n", env.Transaction)
		}
	}
	return &Result{Text: b.String(), Structured: st}, nil
}

func begin(ctx context.Context, env *Env, _ Args) (*Result, error) {
	h, err := env.txs.Begin(ctx, env.holder)
	if err != nil {
		return nil, err
	}
	idle := env.txs.opts.IdleTimeout
	return &Result{
		Text:       fmt.Sprintf("transaction: %s\nPass it as the transaction argument; commit or abort ends it; it is rolled back after %s without a call.", h, idle),
		Structured: map[string]any{"transaction": h, "idleTimeoutSeconds": idle.Seconds()},
	}, nil
}

func commit(ctx context.Context, env *Env, _ Args) (*Result, error) {
	if err := env.DB.Commit(ctx); err != nil {
		return nil, err
	}
	if env.Transaction != "" {
		env.txs.end(env.Transaction)
		return &Result{Text: "committed; the transaction handle has ended", Structured: map[string]any{"committed": true}}, nil
	}
	return &Result{Text: "committed; the next statement begins a new transaction", Structured: map[string]any{"committed": true}}, nil
}

func abort(ctx context.Context, env *Env, _ Args) (*Result, error) {
	if err := env.DB.Abort(ctx); err != nil {
		return nil, err
	}
	if env.Transaction != "" {
		env.txs.end(env.Transaction)
		return &Result{Text: "aborted: uncommitted changes discarded; the transaction handle has ended", Structured: map[string]any{"aborted": true}}, nil
	}
	return &Result{Text: "aborted: uncommitted changes discarded; the next statement begins a new transaction", Structured: map[string]any{"aborted": true}}, nil
}

func refresh(ctx context.Context, env *Env, _ Args) (*Result, error) {
	if err := env.DB.Refresh(ctx); err != nil {
		return nil, err
	}
	return &Result{Text: "refreshed: the session now sees every committed change", Structured: map[string]any{"refreshed": true}}, nil
}
