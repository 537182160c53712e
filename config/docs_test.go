package config

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docRow is one row of a key table in docs/configuration.md.
type docRow struct {
	key, def, env string
	flag          string // the Flag column, when the table has one
}

// docKeys parses the key tables of docs/configuration.md: under each
// "### `section`" heading, the rows of a table whose header starts
// "| Key | Default | Environment |".
func docKeys(t *testing.T) map[string]docRow {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	defer f.Close()
	rows := map[string]docRow{}
	section, inTable, hasFlag := "", false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			section, inTable = "", false
			if s, ok := strings.CutPrefix(line, "### `"); ok {
				section, _, _ = strings.Cut(s, "`")
			}
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case strings.HasPrefix(line, "| Key | Default | Environment |"):
			inTable, hasFlag = section != "", strings.HasPrefix(line, "| Key | Default | Environment | Flag |")
		case inTable && !strings.HasPrefix(line, "|--"):
			cells := strings.Split(line, "|")
			require.GreaterOrEqual(t, len(cells), 5, "row %q", line)
			leaf := strings.Trim(strings.TrimSpace(cells[1]), "`")
			name := section + "." + leaf
			if leaf == section { // servers: a key of its own
				name = section
			}
			_, dup := rows[name]
			assert.False(t, dup, "key %s is listed twice", name)
			row := docRow{key: name, def: strings.TrimSpace(cells[2]), env: strings.TrimSpace(cells[3])}
			if hasFlag {
				row.flag = strings.TrimSpace(cells[4])
			}
			rows[name] = row
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, rows, "no key tables found in docs/configuration.md")
	return rows
}

// docDefaultNotLiteral are the keys whose documented default is a phrase,
// not a value: what the phrase means is checked here by hand.
var docDefaultNotLiteral = map[string]string{
	"server.public_url":                     "—",
	"audit.path":                            "—",
	"audit.redact_arguments":                "none",
	"tracing.otlp_endpoint":                 "—",
	"server.title":                          "—",
	"server.local_user":                     "the OS user",
	"server.replica_id":                     "—",
	"server.unix_allowed_users":             "—",
	"database.user_role_member_of":          "—",
	"worker.command":                        "built-in",
	"worker.sessions":                       "`shared` for the built-in worker, `per_session` for an external `command`",
	"worker.env":                            "—",
	"worker.credentials":                    "—",
	"worker.dir":                            "the gateway's",
	"worker.uid_range":                      "—",
	"worker.uid_map_file":                   "—",
	"worker.data_dir":                       "—",
	"worker.group":                          "—",
	"worker.limits.user_processes":          "none",
	"worker.toolsets":                       "all built-in",
	"worker.safe_tools":                     "none",
	"worker.limits.address_space":           "none",
	"worker.limits.cpu_time":                "none",
	"worker.limits.open_files":              "none",
	"worker.limits.memory":                  "none",
	"worker.limits.cpu":                     "none",
	"worker.limits.processes":               "none",
	"worker.safe_methods":                   "none",
	"database.dsn":                          "—",
	"database.transaction_idle_timeout":     "`limits.session_idle_timeout`",
	"limits.max_connections_per_principal":  "`max_connections` / 4",
	"auth.issuer":                           "—",
	"auth.authorization_servers":            "`[issuer]`",
	"auth.required_scopes":                  "—",
	"auth.write_scope":                      "—",
	"auth.extra_scopes":                     "—",
	"auth.policies":                         "—",
	"auth.initial_scopes":                   "—",
	"auth.algorithms":                       "`RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 ES512 EdDSA`, plus `HS256 HS384 HS512` with `hmac_secret_file`",
	"auth.hmac_secret_file":                 "—",
	"auth.issuer_ca_file":                   "—",
	"auth.introspection_client_id":          "—",
	"auth.introspection_client_secret_file": "—",
	"auth.dpop_nonce_secret_file":           "—",
	"tls.cert_file":                         "—",
	"tls.key_file":                          "—",
	"web.admin":                             "—",
	"web.client_id":                         "—",
	"web.client_secret_file":                "—",
	"web.cookie_key_file":                   "—",
	"tls.client_ca_file":                    "—",
	"servers":                               "—",
}

// TestDocsKeyTables holds docs/configuration.md's key tables to the Config
// struct both ways: every key has a row and every row a key, each row names
// the key's environment variable, and each documented default is the one
// Default() holds.
func TestDocsKeyTables(t *testing.T) {
	rows := docKeys(t)
	keys := Keys()
	for _, k := range keys {
		assert.Contains(t, rows, k, "key %s has no row in docs/configuration.md", k)
	}
	for k := range rows {
		assert.Contains(t, keys, k, "docs/configuration.md documents %s, which is not a key", k)
	}

	def := Default()
	for _, k := range keys {
		row, ok := rows[k]
		if !ok {
			continue
		}
		t.Run(k, func(t *testing.T) {
			envCol, _, _ := strings.Cut(row.env, " ")
			assert.Equal(t, "`"+EnvName(k)+"`", envCol, "environment column")
			if legacy, ok := LegacyEnv[k]; ok {
				assert.Contains(t, row.env, "`"+legacy+"`", "legacy name")
			}

			wantFlag := "—"
			for f, fk := range flagKeys {
				if fk == k {
					wantFlag = "`--" + f + "`"
				}
			}
			if row.flag != "" || wantFlag != "—" {
				assert.Equal(t, wantFlag, row.flag, "flag column (or the table has no Flag column)")
			}

			if phrase, ok := docDefaultNotLiteral[k]; ok {
				assert.Equal(t, phrase, row.def, "default column (update docDefaultNotLiteral with the docs)")
				return
			}
			// A literal default: setting the key to it must change nothing.
			lit, ok := strings.CutPrefix(row.def, "`")
			require.True(t, ok, "default %q is neither a `literal` nor in docDefaultNotLiteral", row.def)
			lit, ok = strings.CutSuffix(lit, "`")
			require.True(t, ok && !strings.Contains(lit, "`"), "default %q is not one `literal`", row.def)
			if lit == "[]" {
				assert.Zero(t, fieldOf(def, k).Len(), "documented empty, default is not")
				return
			}
			got, err := Loader{Getenv: env(map[string]string{EnvName(k): lit})}.Load("", nil)
			require.NoError(t, err)
			assert.Equal(t, def, got, "documented default %s is not Default()'s", lit)
			if lit != "false" {
				assert.False(t, fieldOf(def, k).IsZero(), "documented default %s, but Default() leaves the key zero", lit)
			}
		})
	}

	// The phrases that mean "empty" must mean it.
	for k, phrase := range docDefaultNotLiteral {
		if phrase == "—" || phrase == "none" || slices.Contains([]string{"server.local_user", "worker.command", "worker.dir", "worker.toolsets"}, k) {
			assert.True(t, fieldOf(def, k).IsZero(), "%s is documented %q but defaults to %v", k, phrase, fieldOf(def, k))
		}
	}
	assert.Equal(t, def.Limits.SessionIdleTimeout, def.Database.TransactionIdleTimeout)
	assert.Equal(t, def.Limits.MaxConnections/4, def.Limits.MaxConnectionsPerPrincipal)
}

// TestDocsFlagsTable holds the "## Flags" table of docs/configuration.md to
// the flags of `mcpgate serve`, both ways.
func TestDocsFlagsTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "\n## Flags\n")
	require.True(t, ok, "docs/configuration.md has no Flags section")
	table, _, _ = strings.Cut(table, "\n## ")
	got := map[string]string{}
	for line := range strings.Lines(table) {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`--") {
			continue
		}
		flag, _, _ := strings.Cut(strings.Trim(strings.TrimSpace(cells[1]), "`"), " ")
		key, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(cells[2]), "`"), "`")
		got[strings.TrimPrefix(flag, "--")] = key
	}
	assert.Contains(t, got, "config", "--config is not in the Flags table")
	delete(got, "config") // the file itself, not a key
	want := map[string]string{}
	for f, k := range flagKeys {
		want[f] = k
	}
	assert.Equal(t, want, got)
	Flags().VisitAll(func(f *pflag.Flag) {
		assert.True(t, f.Name == "config" || got[f.Name] != "", "flag --%s is not in the Flags table", f.Name)
	})
}

// fieldOf returns the field of c that key names.
func fieldOf(c *Config, key string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, f := range strings.Split(key, ".") {
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("mapstructure") == f {
				v = v.Field(i)
				break
			}
		}
	}
	return v
}
