package db

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigRoundTrip(t *testing.T) {
	tests := []Config{
		{Driver: SQLite, DSN: "/var/lib/mcpgate/data/mcpgate.db"},
		{Driver: Postgres, DSN: "host=/run/postgresql dbname=app", SetRole: true, UserRoleMemberOf: "mcp_users", StatementTimeout: 5 * time.Second, LockTimeout: time.Second, MaxRows: 50, MaxTransactions: 4, TransactionIdleTimeout: time.Minute, IdleRelease: 2 * time.Second},
		{Driver: Postgres, DSN: "host=/run/postgresql dbname=app", ConnectAsUser: true, UserRoleMemberOf: "mcp_users"},
	}
	for _, want := range tests {
		t.Run(want.Driver+" "+want.DSN, func(t *testing.T) {
			env := map[string]string{}
			for _, kv := range want.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			got, err := ConfigFromEnv(func(k string) string { return env[k] })
			require.NoError(t, err)
			assert.Equal(t, want.WithDefaults(), got)
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	got, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, Config{Driver: SQLite, DSN: DefaultSQLitePath, StatementTimeout: DefaultStatementTimeout, LockTimeout: DefaultLockTimeout, MaxRows: DefaultMaxRows, ChecksTimeout: DefaultChecksTimeout,
		MaxTransactions: DefaultMaxTransactions, TransactionIdleTimeout: DefaultTransactionIdleTimeout, IdleRelease: DefaultIdleRelease}, got)
}

func TestConfigErrors(t *testing.T) {
	env := map[string]string{
		EnvDriver:                 "postgres",
		EnvSetRole:                "maybe",
		EnvConnectAsUser:          "perhaps",
		EnvStatementTimeout:       "soon",
		EnvLockTimeout:            "-1s",
		EnvMaxRows:                "many",
		EnvMaxTransactions:        "0",
		EnvTransactionIdleTimeout: "never",
		EnvIdleRelease:            "0s",
	}
	_, err := ConfigFromEnv(func(k string) string { return env[k] })
	require.Error(t, err)
	for _, name := range []string{EnvDSN, EnvSetRole, EnvConnectAsUser, EnvStatementTimeout, EnvLockTimeout, EnvMaxRows, EnvMaxTransactions, EnvTransactionIdleTimeout, EnvIdleRelease} {
		assert.Contains(t, err.Error(), name, "every problem is reported at once")
	}
}

func TestConfigConnectAsUser(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"with sqlite", map[string]string{EnvConnectAsUser: "true"}, EnvConnectAsUser + "=true needs " + EnvDriver},
		{"with set role", map[string]string{EnvDriver: Postgres, EnvDSN: "dbname=app", EnvSetRole: "true", EnvConnectAsUser: "true"}, "are exclusive"},
		{"without a group role", map[string]string{EnvDriver: Postgres, EnvDSN: "dbname=app", EnvConnectAsUser: "true"}, "need " + EnvUserRoleMemberOf},
		{"set role without a group role", map[string]string{EnvDriver: Postgres, EnvDSN: "dbname=app", EnvSetRole: "true"}, "need " + EnvUserRoleMemberOf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ConfigFromEnv(func(k string) string { return tt.env[k] })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestEnvironRoundTrip: every setting reaches the worker: each field of
// Config has its variable, and what Environ writes ConfigFromEnv reads back.
func TestEnvironRoundTrip(t *testing.T) {
	c := Config{Driver: Postgres, DSN: "dbname=app", ConnectAsUser: true, UserRoleMemberOf: "mcp_users",
		StatementTimeout: 7 * time.Second, LockTimeout: 3 * time.Second, MaxRows: 9, ChecksTimeout: time.Minute,
		MaxTransactions: 2, TransactionIdleTimeout: time.Hour, IdleRelease: 4 * time.Second}
	for i := range reflect.TypeFor[Config]().NumField() {
		name := reflect.TypeFor[Config]().Field(i).Name
		assert.True(t, slices.ContainsFunc(envFields, func(f envField) bool { return f.field == name }), "no worker variable carries %s", name)
	}
	env := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err := ConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, c, got)
}
