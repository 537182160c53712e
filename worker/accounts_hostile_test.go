package worker

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("MCPGATE_REQUIRE_ROOT") == "1" {
			t.Fatal("this test must run as root (MCPGATE_REQUIRE_ROOT=1)")
		}
		t.Skip("needs root")
	}
}

// TestAccountsLookalikeIDs: ids a user can give themselves that resemble
// another's (case, a trailing dot, a suffix) get uids and directories of
// their own, never another's; ids beyond ASCII letters, digits and ._@+-
// (confusables, other normalization forms, spaces) are refused.
func TestAccountsLookalikeIDs(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, First: 500001, Last: 500100, MapFile: filepath.Join(dir, "uids.json"), DataDir: filepath.Join(dir, "users"), Self: uint32(os.Getuid())})
	require.NoError(t, err)
	ids := []string{"alice", "Alice", "ALICE", "alice.", "alice..", "alice@", "alice+x", "alice_", "alice-"}
	uids := map[uint32]string{}
	dirs := map[string]string{}
	for _, id := range ids {
		acc, err := a.For(id)
		if os.Geteuid() != 0 { // the chown needs CAP_CHOWN
			if err != nil {
				continue
			}
		}
		require.NoError(t, err, id)
		assert.Empty(t, uids[acc.UID], "%q and %q share uid %d", uids[acc.UID], id, acc.UID)
		assert.Empty(t, dirs[acc.Dir], "%q and %q share %s", dirs[acc.Dir], id, acc.Dir)
		uids[acc.UID], dirs[acc.Dir] = id, id
	}
	for _, id := range []string{"аlice", "ａlice", "alice\u200b", "alice ", "al\u0131ce", "Å", "A\u030a", "alice/..", "a\\b"} {
		_, err := a.For(id)
		assert.ErrorIs(t, err, ErrNoAccount, "%q", id)
	}
}

// TestAccountsLinkedDataDir: a data directory found as a link (to a
// directory elsewhere, or to a file) is refused, not followed, and
// what it points to keeps its owner and mode.
func TestAccountsLinkedDataDir(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	a, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, First: 500001, Last: 500100, MapFile: filepath.Join(dir, "uids.json"), DataDir: users})
	require.NoError(t, err)
	target := filepath.Join(dir, "elsewhere")
	require.NoError(t, os.Mkdir(target, 0o755))
	require.NoError(t, os.Symlink(target, filepath.Join(users, "mallory")))
	_, err = a.For("mallory")
	require.ErrorIs(t, err, ErrNoAccount)
	fi, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	assert.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid)
}

// TestAccountsLinkedMapFile: a mapping file that is a link is read, but
// an allocation replaces the link, never writes through it.
func TestAccountsLinkedMapFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("{}\n"), 0o600))
	f := filepath.Join(dir, "uids.json")
	require.NoError(t, os.Symlink(target, f))
	a := newTestAccounts(t, f, 500001, 500010)
	_, err := a.For("bob")
	require.NoError(t, err)
	got, _ := os.ReadFile(target)
	assert.Equal(t, "{}\n", string(got))
}

// TestAccountsMappedUIDBecomesAccount: a uid allocated to a user id that
// an account is given later (useradd into the range) is refused, not
// run: the worker would reach that account's files.
func TestAccountsMappedUIDBecomesAccount(t *testing.T) {
	needRoot(t)
	uid := 460000 + os.Getpid()%10000
	f := filepath.Join(t.TempDir(), "uids.json")
	require.NoError(t, os.WriteFile(f, []byte(`{"alice": `+strconv.Itoa(uid)+`}`), 0o600))
	a := newTestAccounts(t, f, uint32(uid), uint32(uid)+10)
	acc, err := a.For("alice")
	require.NoError(t, err)
	require.Equal(t, uint32(uid), acc.UID)

	name := "mcpgl" + strconv.Itoa(os.Getpid())
	out, err := exec.Command("useradd", "--no-create-home", "--uid", strconv.Itoa(uid), "--user-group", name).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	for _, m := range []*Accounts{a, newTestAccounts(t, f, uint32(uid), uint32(uid)+10)} { // cached, and read afresh
		_, err = m.For("alice")
		assert.ErrorIs(t, err, ErrNoAccount)
	}
}

// TestAccountsOpenDirs: a data directory or a mapping file's directory
// that a worker could write (other-writable, writable by worker.group or
// by a group of the range, owned by someone else) is refused at start: a
// worker could plant another user's data directory or a mapping file that
// gives it another user's uid.
func TestAccountsOpenDirs(t *testing.T) {
	needRoot(t)
	for name, c := range map[string]struct {
		mode     os.FileMode
		uid, gid int
		mapFile  bool
	}{
		"data dir other-writable":  {mode: 0o777},
		"data dir of worker.group": {mode: 0o770 | os.ModeSetgid, gid: 4242},
		"data dir of a range gid":  {mode: 0o770, gid: 500005},
		"data dir of another uid":  {mode: 0o711, uid: 1234},
		"map dir other-writable":   {mode: 0o1777, mapFile: true},
		"map dir of worker.group":  {mode: 0o770 | os.ModeSetgid, gid: 4242, mapFile: true},
		"map dir of another uid":   {mode: 0o700, uid: 500003, mapFile: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chown(dir, c.uid, c.gid))
			require.NoError(t, os.Chmod(dir, c.mode))
			o := AccountsOptions{RunAs: RunAsUser, First: 500001, Last: 500100, Group: 4242, HasGroup: true,
				MapFile: filepath.Join(t.TempDir(), "uids.json"), DataDir: dir}
			if c.mapFile {
				o.MapFile, o.DataDir = filepath.Join(dir, "uids.json"), filepath.Join(t.TempDir(), "users")
			}
			_, err := NewAccounts(o)
			assert.Error(t, err)
		})
	}
	// Group-writable by a group no worker holds is the operator's.
	dir := t.TempDir()
	require.NoError(t, os.Chown(dir, 0, 77))
	require.NoError(t, os.Chmod(dir, 0o2770))
	_, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, First: 500001, Last: 500100, Group: 4242, HasGroup: true, MapFile: filepath.Join(dir, "uids.json"), DataDir: filepath.Join(dir, "users")})
	assert.NoError(t, err)
}

// TestAccountsSystemPrimaryGroup: a host account from uid 1000 up whose
// primary group is a system group (adm, docker: below 1000) is refused:
// its worker would run with that group (the docker socket's, the logs').
func TestAccountsSystemPrimaryGroup(t *testing.T) {
	needRoot(t)
	name := "mcpgg" + strconv.Itoa(os.Getpid())
	uid := 470000 + os.Getpid()%10000
	out, err := exec.Command("useradd", "--no-create-home", "--uid", strconv.Itoa(uid), "--gid", "4", name).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	a, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, Self: 12345})
	require.NoError(t, err)
	_, err = a.For(name)
	assert.ErrorIs(t, err, ErrNoAccount)
	_, err = NewAccounts(AccountsOptions{RunAs: name, Self: 12345})
	assert.Error(t, err, "run_as naming it")
}

// TestAccountsProcessesAgree: two gateway processes allocating from one
// mapping file at once (the test binary run twice, each allocating the
// same ids in another order) give every id one uid and no uid two ids:
// the lock is a file lock between processes, not a mutex.
func TestAccountsProcessesAgree(t *testing.T) {
	if f := os.Getenv("MCPGATE_TEST_ALLOC_FILE"); f != "" {
		a := newTestAccounts(t, f, 500001, 500200)
		ids := make([]string, 60)
		for i := range ids {
			ids[i] = "p" + strconv.Itoa(i)
		}
		if os.Getenv("MCPGATE_TEST_ALLOC_REVERSE") == "1" {
			slices.Reverse(ids)
		}
		for _, id := range ids {
			_, err := a.For(id)
			require.NoError(t, err)
		}
		return
	}
	f := filepath.Join(t.TempDir(), "uids.json")
	var cmds []*exec.Cmd
	for _, rev := range []string{"0", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAccountsProcessesAgree$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MCPGATE_TEST_ALLOC_FILE="+f, "MCPGATE_TEST_ALLOC_REVERSE="+rev)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		require.NoError(t, cmd.Wait())
	}
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	var m map[string]uint32
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Len(t, m, 60)
	owner := map[uint32]string{}
	for id, uid := range m {
		assert.Empty(t, owner[uid], "uid %d given to %s and %s", uid, owner[uid], id)
		owner[uid] = id
	}
}

// TestAccountsMappedUIDIsGateways: a mapping that gives a user id the
// gateway's own uid (a gateway whose uid, with no passwd entry, lies in
// the range: a container's) is refused, never run as the gateway.
func TestAccountsMappedUIDIsGateways(t *testing.T) {
	f := filepath.Join(t.TempDir(), "uids.json")
	require.NoError(t, os.WriteFile(f, []byte(`{"alice": 500003}`), 0o600))
	a, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, First: 500001, Last: 500010, MapFile: f, Self: 500003})
	require.NoError(t, err)
	_, err = a.For("alice")
	assert.ErrorIs(t, err, ErrNoAccount)
}
