package postgres

import (
	"net/url"

	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// fileKeys are the connection string's keys that name a file the client
// reads when it connects.
var fileKeys = []string{"passfile", "servicefile", "sslrootcert", "sslcert", "sslkey"}

// fileEnv are libpq's variables (pgx reads them too) that name such files.
var fileEnv = []string{"PGPASSFILE", "PGSERVICEFILE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY"}

// kvPair is one key=value of a key=value connection string.
var kvPair = regexp.MustCompile(`(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// SandboxNeeds is what a worker confined to its database needs to reach
// the server of dsn: the files a client reads when it connects (the
// password file, certificates, the service file, under the names the
// connection string and the PG variables give, or libpq's defaults in
// HOME) and the server's TCP ports (none for a Unix socket, which a
// Landlock TCP rule does not cover). getenv reads the worker's
// environment. A DSN that does not parse gives no ports: the worker's
// own open then says why.
func SandboxNeeds(dsn string, getenv func(string) string) (files []string, ports []uint16) {
	for _, name := range fileEnv {
		if v := getenv(name); v != "" {
			files = append(files, v)
		}
	}
	if home := getenv("HOME"); home != "" {
		files = append(files, filepath.Join(home, ".pgpass"), filepath.Join(home, ".pg_service.conf"), filepath.Join(home, ".postgresql"))
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			for _, k := range fileKeys {
				if v := q.Get(k); v != "" {
					files = append(files, v)
				}
			}
		}
	} else {
		for _, m := range kvPair.FindAllStringSubmatch(dsn, -1) {
			for _, k := range fileKeys {
				if m[1] == k {
					v := strings.Trim(m[2], "'")
					files = append(files, strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v))
				}
			}
		}
	}
	for i, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			files[i] = abs
		}
	}
	pc, err := pgconn.ParseConfig(withoutFiles(dsn))
	if err != nil {
		return files, nil
	}
	add := func(host string, port uint16) {
		// A host appears once per TLS attempt (sslmode=prefer tries TLS,
		// then plain): each port once.
		if !strings.HasPrefix(host, "/") && port != 0 && !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	add(pc.Host, pc.Port)
	for _, f := range pc.Fallbacks {
		add(f.Host, f.Port)
	}
	return files, ports
}

// SandboxSystemFiles are what any client of a server by name reads:
// name resolution and the system's certificates.
var SandboxSystemFiles = []string{
	"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
}

// withoutFiles is dsn with TLS off and no file named, for its hosts and
// ports alone: parsing reads the files it names, which need not exist
// where the ports are read (and fail the parse when they do not).
func withoutFiles(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn
		}
		q := u.Query()
		for _, k := range fileKeys {
			q.Del(k)
		}
		q.Set("sslmode", "disable")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " sslmode=disable sslrootcert='' sslcert='' sslkey='' passfile='' servicefile=''"
}
