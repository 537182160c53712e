package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpgate/mcpgate/workerproto"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/filelock"
)

// Who a worker runs as (worker.run_as).
const (
	RunAsGateway = "gateway" // the gateway's own account (the default)
	RunAsUser    = "user"    // an OS account per user id
)

// MinAccountUID is the lowest uid of an existing account a user id may map
// to: below it are the system's own accounts (root, daemon, postgres),
// which no user id may borrow (login.defs' UID_MIN).
const MinAccountUID = 1000

// overflowID is nobody's uid and nogroup's gid, which the kernel also
// shows for ids it cannot map: shared by every daemon that uses it.
const overflowID = 65534

// ErrNoAccount is returned by Launcher.Start, wrapped, when the session's
// user id cannot be mapped to an OS account under worker.run_as: user (no
// account and no uid left in the range, an unreadable mapping file, an id
// that cannot name a directory). The worker is not started: it never
// falls back to the gateway's account.
var ErrNoAccount = errors.New("worker: no OS account for this user id")

// Account is the OS account one worker runs as.
type Account struct {
	Name  string // the account's name, or "" for an account-less uid
	UID   uint32
	GID   uint32   // the primary group: the account's, or the uid's number for an account-less uid
	Dir   string   // the user's data directory (HOME, working and temp directory); "" for none
	Extra []uint32 // supplementary groups: AccountsOptions.Group, if set
}

// AccountsOptions say how user ids map to OS accounts (worker.run_as and
// the keys beside it).
type AccountsOptions struct {
	// RunAs is RunAsUser or the name of one fixed account every worker
	// runs as. (RunAsGateway needs no Accounts.)
	RunAs string
	// First and Last bound the account-less uids allocated to user ids
	// that have no account of their own (worker.uid_range); both 0: none,
	// and such ids are refused.
	First, Last uint32
	// MapFile keeps the allocated uids, user id to uid (worker.uid_map_file);
	// required with a range. Replicas sharing it agree: each allocation is
	// made under a lock on MapFile+".lock" and written atomically.
	MapFile string
	// DataDir holds each user's data directory, DataDir/<user id>, created
	// mode 0700 and owned by the user's account (worker.data_dir). Empty:
	// none (a worker keeps the launcher's Dir and the base HOME).
	DataDir string
	// Group, when HasGroup, is a supplementary group of every worker
	// account (worker.group): the group that shares a SQLite database.
	Group    uint32
	HasGroup bool
	// Self is the gateway's own uid, which no user id may map to; 0 means
	// os.Getuid().
	Self uint32
}

// Accounts maps user ids to the OS accounts their workers run as. Safe
// for concurrent use.
type Accounts struct {
	opts  AccountsOptions
	fixed *Account // RunAs names one account

	mu     sync.Mutex
	mapped map[string]uint32 // allocated uids read or written; entries never change
}

// NewAccounts checks opts and, for a fixed account, looks it up.
func NewAccounts(opts AccountsOptions) (*Accounts, error) {
	if opts.Self == 0 {
		opts.Self = uint32(os.Getuid())
	}
	a := &Accounts{opts: opts, mapped: map[string]uint32{}}
	if opts.DataDir != "" {
		// Traversable (x) by every worker account, listable by none.
		if err := os.MkdirAll(opts.DataDir, 0o711); err != nil {
			return nil, fmt.Errorf("worker: accounts: data directory: %w", err)
		}
		if err := a.closedDir(opts.DataDir); err != nil {
			return nil, fmt.Errorf("worker: accounts: worker.data_dir: %w", err)
		}
	}
	if opts.MapFile != "" {
		if err := a.closedDir(filepath.Dir(opts.MapFile)); err != nil {
			return nil, fmt.Errorf("worker: accounts: worker.uid_map_file's directory: %w", err)
		}
	}
	switch {
	case opts.RunAs == "" || opts.RunAs == RunAsGateway:
		return nil, errors.New("worker: accounts: run_as gateway needs no account mapping")
	case opts.RunAs == RunAsUser:
		if opts.Last != 0 && (opts.First == 0 || opts.First > opts.Last || opts.MapFile == "") {
			return nil, errors.New("worker: accounts: a uid range needs 0 < first <= last and a mapping file")
		}
	default:
		acc, err := a.existing(opts.RunAs)
		if err != nil {
			return nil, fmt.Errorf("worker: accounts: run_as %q: %w", opts.RunAs, err)
		}
		a.fixed = &acc
	}
	return a, nil
}

// RunAs returns the configured mode: RunAsUser or the fixed account's name.
func (a *Accounts) RunAs() string { return a.opts.RunAs }

// For returns the account userID's worker runs as, creating the user's
// data directory. An error wraps ErrNoAccount.
func (a *Accounts) For(userID string) (Account, error) {
	if err := checkUserID(userID); err != nil {
		return Account{}, fmt.Errorf("%w: %v", ErrNoAccount, err)
	}
	var acc Account
	var err error
	switch {
	case a.fixed != nil:
		acc = *a.fixed
	default:
		acc, err = a.existing(userID)
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			acc, err = a.allocated(userID)
		}
	}
	if err != nil {
		return Account{}, fmt.Errorf("%w: %v", ErrNoAccount, err)
	}
	if a.opts.HasGroup {
		acc.Extra = []uint32{a.opts.Group}
	}
	if a.opts.DataDir != "" {
		acc.Dir = filepath.Join(a.opts.DataDir, userID)
		if err := ownedDir(acc.Dir, acc.UID, acc.GID); err != nil {
			return Account{}, fmt.Errorf("%w: data directory: %v", ErrNoAccount, err)
		}
	}
	return acc, nil
}

// checkUserID refuses an id that cannot be a directory name of its own or
// a key of the mapping file as written: empty, ".", "..", a leading dot or
// dash, a character beyond letters, digits and ._@+- , or over 128 bytes.
func checkUserID(id string) error {
	if id == "" || id == "." || id == ".." || id[0] == '.' || id[0] == '-' || len(id) > 128 {
		return errors.New("the user id cannot name a data directory (empty, too long, or starts with . or -)")
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@+-", r)) {
			return errors.New("the user id holds a character other than letters, digits and ._@+-")
		}
	}
	return nil
}

// existing looks name up in the system's user database. It refuses the
// system's accounts (uid or primary gid below MinAccountUID, root among
// them: a primary group of adm or docker is a system group too) and the
// gateway's own.
func (a *Accounts) existing(name string) (Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	switch {
	case err1 != nil || err2 != nil:
		return Account{}, fmt.Errorf("account %q has a uid or gid that is not a number", name)
	case uid < MinAccountUID || gid < MinAccountUID || uid == overflowID || gid == overflowID:
		return Account{}, fmt.Errorf("account %q is a system account (uid %d, gid %d); only accounts from uid %d up, not nobody, serve users", name, uid, gid, MinAccountUID)
	case uint32(uid) == a.opts.Self:
		return Account{}, fmt.Errorf("account %q is the gateway's own", name)
	}
	return Account{Name: u.Username, UID: uint32(uid), GID: uint32(gid)}, nil
}

// closedDir refuses a directory a worker account could write: one owned
// by anyone but the gateway or root, one writable by others, or by a group
// a worker holds (worker.group, or a number of the range, which allocated
// uids have as their group). A worker that can create, rename or replace
// entries there could plant a data directory for a user who has none yet,
// or a mapping file that gives it another user's uid.
func (a *Accounts) closedDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	perm := fi.Mode().Perm()
	workerGroup := a.opts.HasGroup && st.Gid == a.opts.Group || a.opts.Last != 0 && st.Gid >= a.opts.First && st.Gid <= a.opts.Last
	switch {
	case st.Uid != a.opts.Self && st.Uid != 0:
		return fmt.Errorf("%s is owned by uid %d, not the gateway's account or root", dir, st.Uid)
	case perm&0o002 != 0, perm&0o020 != 0 && workerGroup:
		return fmt.Errorf("%s is writable by others or by a group workers hold (mode %o, gid %d): a worker could put files there", dir, perm, st.Gid)
	}
	return nil
}

// allocated returns userID's uid from the range, allocating one on first
// use. Its primary group is the uid's number, which names no group.
func (a *Accounts) allocated(userID string) (Account, error) {
	if a.opts.Last == 0 {
		return Account{}, errors.New("no account of that name, and worker.uid_range is not set")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if uid, ok := a.mapped[userID]; ok {
		if err := a.accountless(uid); err != nil {
			return Account{}, err
		}
		return Account{UID: uid, GID: uid}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lk, err := filelock.Acquire(ctx, a.opts.MapFile+".lock")
	if err != nil {
		return Account{}, fmt.Errorf("uid mapping: %v", err)
	}
	defer lk.Unlock()
	m, err := a.readMap()
	if err != nil {
		return Account{}, err
	}
	for id, uid := range m { // another replica's allocations
		a.mapped[id] = uid
	}
	uid, ok := m[userID]
	if ok {
		if err := a.accountless(uid); err != nil {
			return Account{}, err
		}
	} else {
		if uid, err = a.free(m); err != nil {
			return Account{}, err
		}
		m[userID] = uid
		if err := writeMap(a.opts.MapFile, m); err != nil {
			return Account{}, err
		}
		a.mapped[userID] = uid
	}
	return Account{UID: uid, GID: uid}, nil
}

// readMap reads the mapping file (missing: empty). It refuses a file it
// cannot read or parse, a uid outside the range and a uid given twice, so
// that a damaged or hand-edited file never hands a user someone else's
// uid, or root's.
func (a *Accounts) readMap() (map[string]uint32, error) {
	b, err := os.ReadFile(a.opts.MapFile)
	m := map[string]uint32{}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("uid mapping: %v", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("uid mapping: %s is not a JSON object of user id to uid: %v", a.opts.MapFile, err)
	}
	if m == nil { // null: no map to add to
		return nil, fmt.Errorf("uid mapping: %s is null, not a JSON object of user id to uid", a.opts.MapFile)
	}
	owner := map[uint32]string{}
	for id, uid := range m {
		if uid < a.opts.First || uid > a.opts.Last {
			return nil, fmt.Errorf("uid mapping: %s gives %q uid %d, outside worker.uid_range", a.opts.MapFile, id, uid)
		}
		if other, ok := owner[uid]; ok {
			return nil, fmt.Errorf("uid mapping: %s gives uid %d to both %q and %q", a.opts.MapFile, uid, other, id)
		}
		owner[uid] = id
	}
	return m, nil
}

// accountless refuses an allocated uid that is the gateway's own, or that
// an account of the system's user database has since been given (useradd with a uid inside the range,
// a directory service that grew into it): the user's worker would run as
// that account and reach its files. The entry is kept, for the operator to
// resolve.
func (a *Accounts) accountless(uid uint32) error {
	if uid == a.opts.Self {
		return fmt.Errorf("uid mapping: uid %d is the gateway's own", uid)
	}
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return fmt.Errorf("uid mapping: uid %d now belongs to the account %q; move the account or the mapping", uid, u.Username)
	}
	return nil
}

// free returns the lowest uid of the range that m does not hold and that
// no account of the system's user database has.
func (a *Accounts) free(m map[string]uint32) (uint32, error) {
	used := make(map[uint32]bool, len(m))
	for _, uid := range m {
		used[uid] = true
	}
	for uid := uint64(a.opts.First); uid <= uint64(a.opts.Last); uid++ {
		if used[uint32(uid)] || uint32(uid) == a.opts.Self {
			continue
		}
		if _, err := user.LookupId(strconv.FormatUint(uid, 10)); err == nil {
			continue // an account's: not account-less
		}
		return uint32(uid), nil
	}
	return 0, fmt.Errorf("worker.uid_range %d-%d is full", a.opts.First, a.opts.Last)
}

// writeMap replaces path with m, atomically: a temporary file beside it,
// synced, then renamed over it.
func writeMap(path string, m map[string]uint32) error {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	b.WriteString("{\n")
	for i, id := range ids {
		k, _ := json.Marshal(id)
		fmt.Fprintf(&b, "  %s: %d", k, m[id])
		if i < len(ids)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("uid mapping: %v", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("uid mapping: %v", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("uid mapping: %v", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("uid mapping: %v", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("uid mapping: %v", err)
	}
	return nil
}

// ownedDir makes dir a directory of mode 0700 owned by uid:gid, creating
// it if missing. An existing one is taken over only if it is a directory
// (not a link: a worker could plant one in its own parent only if the
// parent were its, which DataDir is not). The mode is set before the
// owner, while the gateway still owns it (after, it would take
// CAP_FOWNER); a directory its account already owns is left as it is.
func ownedDir(dir string, uid, gid uint32) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == uid && st.Gid == gid {
		return nil
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	return os.Lchown(dir, int(uid), int(gid))
}

// Mapped returns the allocated uids as the mapping file holds them now,
// read without the lock (for reports: an allocation in progress may be
// missing); an empty map without a range.
func (a *Accounts) Mapped() (map[string]uint32, error) {
	if a.opts.Last == 0 {
		return map[string]uint32{}, nil
	}
	return a.readMap()
}

// Range returns worker.uid_range's bounds (0, 0 without one).
func (a *Accounts) Range() (first, last uint32) { return a.opts.First, a.opts.Last }

// startAs starts id's worker under the account its user maps to, with the
// user's data directory as its HOME, TMPDIR and working directory. An
// unmappable user id fails with ErrNoAccount and starts nothing.
func (l *Launcher) startAs(id workerproto.Identity, s Session, cfg ConnConfig) (*Conn, error) {
	acc, err := l.opts.Accounts.For(id.User)
	if err != nil {
		closeAll(s.Files...) // the start takes them over, even one that fails
		return nil, err
	}
	env := l.environ(id, s.Credentials)
	pc := l.processConfig(env, cfg.Logger)
	pc.Account = &acc
	pc.Files = s.Files
	for _, f := range s.Files {
		// Owned by the worker's account, which reopens it by
		// /proc/self/fd/N: the file's mode (0400) is checked then.
		if err := f.Chown(int(acc.UID), int(acc.GID)); err != nil {
			closeAll(s.Files...)
			return nil, fmt.Errorf("worker: handing a credential file to the worker's account: %w", err)
		}
	}
	if acc.Dir != "" {
		pc.Dir = acc.Dir
		// Before the identity, which stays last; after worker.env, which
		// may not move a worker out of its own directory.
		n := len(env) - len(id.Environ())
		pc.Env = slices.Concat(env[:n], []string{"HOME=" + acc.Dir, "TMPDIR=" + acc.Dir}, env[n:])
	}
	p, err := StartProcess(pc)
	if err != nil {
		return nil, err
	}
	return NewConn(p, cfg), nil
}
