package postgres

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSandboxNeeds: a confined worker may read the files its connection
// string and the PG variables name, and connect to the TCP ports of every
// host it lists, never to a Unix socket's "port".
func TestSandboxNeeds(t *testing.T) {
	env := map[string]string{"HOME": "/home/gw", "PGPASSFILE": "/etc/mcpgate/pgpass"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name, dsn string
		files     []string
		ports     []uint16
	}{
		{"url with certificates", "postgres://mcp@db.example.com:6543/mcp?sslmode=verify-full&sslrootcert=/etc/pg/ca.pem&sslcert=/etc/pg/c.pem&sslkey=/etc/pg/c.key",
			[]string{"/etc/pg/ca.pem", "/etc/pg/c.pem", "/etc/pg/c.key"}, []uint16{6543}},
		{"key=value with two hosts", "host=a.example.com,b.example.com port=5432,5433 dbname=mcp passfile='/srv/pg pass'",
			[]string{"/srv/pg pass"}, []uint16{5432, 5433}},
		{"unix socket", "host=/run/postgresql dbname=mcp", nil, nil},
		{"default port", "host=db.example.com dbname=mcp", nil, []uint16{5432}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, ports := SandboxNeeds(c.dsn, getenv)
			assert.Subset(t, files, append([]string{"/etc/mcpgate/pgpass", "/home/gw/.pgpass", "/home/gw/.postgresql"}, c.files...))
			assert.Equal(t, c.ports, ports)
		})
	}
}
