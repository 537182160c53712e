package worker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestAccounts(t *testing.T, mapFile string, first, last uint32) *Accounts {
	t.Helper()
	a, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, First: first, Last: last, MapFile: mapFile})
	require.NoError(t, err)
	return a
}

// TestAccountsMapFileRefusesDamage: a mapping file that cannot be read as
// the range's, one that gives a uid outside the range (root's, say) or
// one uid to two users, refuses the users it would decide and is left as
// it is, never rewritten over.
func TestAccountsMapFileRefusesDamage(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":      `{"alice": 500001,`,
		"outside range": `{"alice": 0}`,
		"shared uid":    `{"alice": 500001, "mallory": 500001}`,
		"not a number":  `{"alice": "root"}`,
		"empty":         ``,
		"a JSON null":   `null`,
		"negative uid":  `{"alice": -1}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "uids.json")
			require.NoError(t, os.WriteFile(f, []byte(content), 0o600))
			a := newTestAccounts(t, f, 500001, 500010)
			_, err := a.For("bob")
			require.ErrorIs(t, err, ErrNoAccount)
			_, err = a.For("alice")
			require.ErrorIs(t, err, ErrNoAccount)
			got, _ := os.ReadFile(f)
			assert.Equal(t, content, string(got))
		})
	}
}

// TestAccountsRefusesIDs: ids that cannot name a data directory of their
// own are refused before anything is looked up or allocated.
func TestAccountsRefusesIDs(t *testing.T) {
	f := filepath.Join(t.TempDir(), "uids.json")
	a := newTestAccounts(t, f, 500001, 500010)
	for _, id := range []string{"", ".", "..", ".hidden", "-rf", "a/b", "a b", "a\x00b", string(make([]byte, 129))} {
		_, err := a.For(id)
		assert.ErrorIs(t, err, ErrNoAccount, "%q", id)
	}
	assert.NoFileExists(t, f)
}

// TestAccountsReplicasAgree: two mappings on one file (two replicas)
// allocating at once give every user one uid, and no uid to two users.
func TestAccountsReplicasAgree(t *testing.T) {
	f := filepath.Join(t.TempDir(), "uids.json")
	a, b := newTestAccounts(t, f, 500001, 500100), newTestAccounts(t, f, 500001, 500100)
	var mu sync.Mutex
	got := map[string]map[uint32]bool{}
	var wg sync.WaitGroup
	for i := range 20 {
		for _, m := range []*Accounts{a, b} {
			wg.Go(func() {
				id := "user" + strconv.Itoa(i)
				acc, err := m.For(id)
				assert.NoError(t, err)
				mu.Lock()
				if got[id] == nil {
					got[id] = map[uint32]bool{}
				}
				got[id][acc.UID] = true
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	owner := map[uint32]string{}
	for id, uids := range got {
		require.Len(t, uids, 1, "%s got two uids", id)
		for uid := range uids {
			assert.Empty(t, owner[uid], "uid %d given to %s and %s", uid, owner[uid], id)
			owner[uid] = id
		}
	}
	// And a restart reads them back.
	c := newTestAccounts(t, f, 500001, 500100)
	for id, uids := range got {
		acc, err := c.For(id)
		require.NoError(t, err)
		assert.True(t, uids[acc.UID], id)
	}
}

// TestAccountsExistingAccount: a user id that names an account of the
// system's user database runs as it (the test creates and removes it);
// system accounts, nobody and the gateway's own are refused.
func TestAccountsExistingAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("MCPGATE_REQUIRE_ROOT") == "1" {
			t.Fatal("this test must run as root (MCPGATE_REQUIRE_ROOT=1)")
		}
		t.Skip("creating an account needs root")
	}
	name := fmt.Sprintf("mcpgt%d", os.Getpid())
	uid := 450000 + os.Getpid()%10000
	out, err := exec.Command("useradd", "--no-create-home", "--uid", strconv.Itoa(uid), "--user-group", name).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })

	dir := filepath.Join(t.TempDir(), "users")
	a, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, DataDir: dir, Self: 12345})
	require.NoError(t, err)
	acc, err := a.For(name)
	require.NoError(t, err)
	assert.Equal(t, uint32(uid), acc.UID)
	assert.Equal(t, name, acc.Name)
	fi, err := os.Stat(filepath.Join(dir, name))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	assert.Equal(t, uint32(uid), fi.Sys().(*syscall.Stat_t).Uid, "the data directory is the account's")
	for _, sys := range []string{"root", "daemon", "nobody"} {
		_, err := a.For(sys)
		assert.ErrorIs(t, err, ErrNoAccount, sys)
	}
	self, err := NewAccounts(AccountsOptions{RunAs: RunAsUser, Self: uint32(uid)})
	require.NoError(t, err)
	_, err = self.For(name)
	assert.ErrorIs(t, err, ErrNoAccount, "the gateway's own account")
	_, err = NewAccounts(AccountsOptions{RunAs: "root"})
	assert.Error(t, err, "run_as root")
	// Without a range, an id with no account is refused.
	_, err = a.For("no-such-account-here")
	assert.ErrorIs(t, err, ErrNoAccount)
}
