package doctor

import (
	"fmt"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/worker"
)

// checkAccounts reports who workers run as (worker.run_as): whether this
// process could switch to their accounts, and the uid mapping.
func checkAccounts(r *Report, cfg *config.Config) {
	o, err := cfg.Worker.AccountsOptions()
	switch {
	case err != nil:
		r.fail("accounts", err.Error(), "fix the key named (docs/configuration.md)")
		return
	case o == nil:
		r.ok("accounts", "workers run under the gateway's own account (worker.run_as gateway)")
		return
	}
	if err := worker.CanSwitch(); err != nil {
		r.fail("account switch", err.Error(), "run doctor as the gateway runs (the same user and capabilities); docs/gateway.md, Worker accounts")
	} else {
		r.ok("account switch", "CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL held: workers can start under other accounts")
	}
	a, err := worker.NewAccounts(*o)
	if err != nil {
		r.fail("accounts", err.Error(), "name an account from uid 1000 up that is not the gateway's, or use worker.run_as user; give worker.data_dir and the mapping file's directory to the gateway's account, writable by no worker")
		return
	}
	if o.RunAs != worker.RunAsUser {
		r.ok("accounts", "every worker runs as account "+o.RunAs)
		return
	}
	first, last := a.Range()
	if last == 0 {
		r.ok("accounts", "each user id runs as the account of that name (uid 1000 up); ids without one are refused (no worker.uid_range)")
		return
	}
	m, err := a.Mapped()
	if err != nil {
		r.fail("uid mapping", err.Error(), "restore worker.uid_map_file from a backup, or fix it by hand: a JSON object of user id to a uid of the range, no uid twice")
		return
	}
	size := uint64(last) - uint64(first) + 1
	detail := fmt.Sprintf("users without an account get uids %d-%d from %s: %d of %d taken", first, last, o.MapFile, len(m), size)
	if uint64(len(m))*10 >= size*9 {
		r.warn("uid mapping", detail, "widen worker.uid_range before it is full: a user id with no uid left is refused")
		return
	}
	r.ok("uid mapping", detail)
}
