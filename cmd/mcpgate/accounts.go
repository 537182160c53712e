package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/worker"
)

// workerAccounts maps worker.run_as to the launcher's account mapping. For
// anything but gateway it refuses to start without the capabilities the
// switch needs, and empties the gateway's ambient capabilities so that no
// worker inherits them.
func workerAccounts(cfg *config.Config, log *slog.Logger, wopts *worker.LauncherOptions) error {
	o, err := cfg.Worker.AccountsOptions()
	if err != nil || o == nil {
		return err
	}
	if err := worker.CanSwitch(); err != nil {
		return fmt.Errorf("mcpgate: worker.run_as %s: %w", o.RunAs, err)
	}
	if err := worker.DropAmbient(); err != nil {
		return fmt.Errorf("mcpgate: worker.run_as %s: %w", o.RunAs, err)
	}
	a, err := worker.NewAccounts(*o)
	if err != nil {
		return fmt.Errorf("mcpgate: %w", err)
	}
	wopts.Accounts = a
	if len(cfg.Worker.Command) == 0 && cfg.Database.Driver != db.Postgres && o.HasGroup {
		if err := shareSQLite(cfg.Database.Path, o.Group); err != nil {
			return fmt.Errorf("mcpgate: database.path: sharing it with worker.group: %w", err)
		}
	}
	if wopts.PoolSize > 0 {
		log.Info("mcpgate: no workers are pre-started under worker.run_as: each starts under its user's account when its session does", "run_as", o.RunAs)
		wopts.PoolSize = 0
	}
	log.Info("mcpgate: workers run under their own OS accounts", "run_as", o.RunAs, "uid_range", cfg.Worker.UIDRange, "data_dir", o.DataDir)
	return nil
}

// shareSQLite hands the SQLite database, its directory and the journal
// files beside it to group gid: the directory 2770 (setgid, so that the
// journal, WAL and shm files a worker creates keep the group), the files
// 0660. The workers' accounts all carry gid as a supplementary group. What
// is already so is left alone: a directory prepared by hand needs no
// chmod, which systemd's RestrictSUIDSGID= refuses for the setgid bit.
func shareSQLite(path string, gid uint32) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := share(filepath.Dir(path), gid, 0o770|os.ModeSetgid|os.ModeDir); err != nil {
		return err
	}
	for _, f := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := shareFile(f, gid); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// shareFile gives the file at path group gid and mode 0660, through a
// descriptor opened without following a link. Every worker may write the
// directory, so any of these names may be a link a worker left there to a
// file of the gateway's or the system's (its TLS key, /etc/shadow): a
// symbolic link, or a hard link (a second name), or anything but a
// regular file, is refused rather than handed to the workers.
func shareFile(path string, gid uint32) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link, not the database's own file; remove it", path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file; remove it", path)
	case !ok || st.Nlink != 1:
		return fmt.Errorf("%s has more than one name (a hard link); remove it", path)
	}
	if st.Gid != gid {
		if err := f.Chown(-1, int(gid)); err != nil {
			return err
		}
	}
	if fi.Mode()&(os.ModePerm|os.ModeSetgid|os.ModeSetuid) != 0o660 {
		return f.Chmod(0o660)
	}
	return nil
}

// share gives path group gid and mode, unless it has them already.
func share(path string, gid uint32, mode os.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Gid != gid {
		if err := os.Chown(path, -1, int(gid)); err != nil {
			return err
		}
	}
	want := mode &^ os.ModeDir
	if fi.Mode()&(os.ModePerm|os.ModeSetgid) != want {
		return os.Chmod(path, want)
	}
	return nil
}
