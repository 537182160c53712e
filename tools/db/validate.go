package db

import (
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/options"
)

// Validate reports every setting that cannot work, each as an
// *options.Error naming its field. Zero values stand for the defaults; the
// DSN is never shown.
func (c Config) Validate() error {
	var p options.Problems
	switch c.Driver {
	case "", SQLite:
		if c.SetRole {
			p.Add("SetRole", "needs Driver: %s; SQLite has no roles", Postgres)
		}
		if c.ConnectAsUser {
			p.Add("ConnectAsUser", "needs Driver: %s; SQLite has no roles", Postgres)
		}
	case Postgres:
		if c.DSN == "" {
			p.Add("DSN", "is required with driver %s; e.g. postgres://mcpgate@db.example.com/mcp?sslmode=verify-full", Postgres)
		} else if !plausibleDSN(c.DSN) {
			p.Add("DSN", "is neither a postgres:// URL nor key=value pairs (its value is not shown)")
		}
	default:
		p.Add("Driver", "%q is not a driver; use %s or %s", c.Driver, SQLite, Postgres)
	}
	switch r := c.UserRoleMemberOf; {
	case c.Driver == Postgres && (c.SetRole || c.ConnectAsUser) && r == "":
		p.Add("UserRoleMemberOf", "is required with SetRole or ConnectAsUser: name the role every user's role is a member of (CREATE ROLE mcp_users NOLOGIN; GRANT mcp_users TO alice), so that a user id naming any other role (postgres, the login role) is refused")
	case r != "" && c.Driver == Postgres && !c.SetRole && !c.ConnectAsUser:
		p.Add("UserRoleMemberOf", "is set but neither SetRole nor ConnectAsUser is; remove it or turn one on")
	case len(r) > 63 || strings.IndexFunc(r, unicode.IsControl) >= 0 || !utf8.ValidString(r):
		p.Add("UserRoleMemberOf", "%q cannot be a PostgreSQL role name (at most 63 bytes, no control characters)", r)
	}
	if c.SetRole && c.ConnectAsUser {
		p.Add("ConnectAsUser", "and SetRole are exclusive: a worker logged in as its user has no other role to set; keep ConnectAsUser")
	}
	for _, d := range []struct {
		field   string
		val     time.Duration
		example string
	}{
		{"StatementTimeout", c.StatementTimeout, "30s"},
		{"LockTimeout", c.LockTimeout, "5s"},
		{"ChecksTimeout", c.ChecksTimeout, "2m"},
		{"IdleRelease", c.IdleRelease, "10s"},
		{"TransactionIdleTimeout", c.TransactionIdleTimeout, "30m"},
	} {
		if d.val < 0 {
			p.Add(d.field, "%v is negative; use a duration such as %s", d.val, d.example)
		}
	}
	if c.MaxRows < 0 {
		p.Add("MaxRows", "%d is negative; use a row count such as %d", c.MaxRows, DefaultMaxRows)
	}
	if c.MaxTransactions < 0 {
		p.Add("MaxTransactions", "%d is negative; use a handle count such as %d", c.MaxTransactions, DefaultMaxTransactions)
	}
	return p.Err("db")
}

// plausibleDSN accepts the two forms pgx parses: a URL and key=value pairs.
func plausibleDSN(dsn string) bool {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		_, err := url.Parse(dsn)
		return err == nil
	}
	return strings.Contains(dsn, "=")
}
