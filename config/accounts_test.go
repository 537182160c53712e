package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestValidateAccountsDatabaseBeside: nothing of the gateway's may lie in
// worker.data_dir, where a user id names a directory the gateway hands to
// its account (a user called "state" or "data" would be given the
// directory of the mapping file or the database). With the built-in worker on SQLite,
// the gateway makes the database's directory writable by worker.group,
// which every worker holds. The mapping file and the data directory must
// not lie in it or below it: a worker could replace the mapping file (and
// take another user's uid) or plant another user's data directory.
func TestValidateAccountsDatabaseBeside(t *testing.T) {
	base := func(db, mapFile, dataDir string) *Config {
		c := Default()
		c.Database.Path = db
		c.Worker.PoolSize = 0
		c.Worker.RunAs = "user"
		c.Worker.UIDRange = "200000-200100"
		c.Worker.UIDMapFile = mapFile
		c.Worker.DataDir = dataDir
		c.Worker.Group = "0"
		return c
	}
	tests := []struct {
		name string
		cfg  *Config
		want []string
	}{
		{"apart", base("/var/lib/mcpgate/data/mcpgate.db", "/var/lib/mcpgate/uids.json", "/var/lib/mcpgate/users"), nil},
		{"a sibling named alike", base("/var/lib/mcpgate/data/mcpgate.db", "/var/lib/mcpgate/data2/uids.json", "/var/lib/mcpgate/database"), nil},
		{"mapping file beside", base("/var/lib/mcpgate/mcpgate.db", "/var/lib/mcpgate/uids.json", "/srv/users"),
			[]string{"worker.uid_map_file: /var/lib/mcpgate/uids.json is inside database.path's directory"}},
		{"data dir below", base("/var/lib/mcpgate/mcpgate.db", "/srv/uids.json", "/var/lib/mcpgate/users"),
			[]string{"worker.data_dir: /var/lib/mcpgate/users is inside database.path's directory"}},
		{"data dir is it", base("/var/lib/mcpgate/users/mcpgate.db", "/srv/uids.json", "/var/lib/mcpgate/users"),
			[]string{"worker.data_dir: /var/lib/mcpgate/users is inside database.path's directory", "database.path: /var/lib/mcpgate/users/mcpgate.db is inside worker.data_dir"}},
		{"database inside the data dir", base("/var/lib/mcpgate/users/data/mcpgate.db", "/srv/uids.json", "/var/lib/mcpgate/users"),
			[]string{"database.path: /var/lib/mcpgate/users/data/mcpgate.db is inside worker.data_dir"}},
		{"mapping file inside the data dir", base("/var/lib/mcpgate/data/mcpgate.db", "/var/lib/mcpgate/users/state/uids.json", "/var/lib/mcpgate/users"),
			[]string{"worker.uid_map_file: /var/lib/mcpgate/users/state/uids.json is inside worker.data_dir"}},
		{"on PostgreSQL no matter", func() *Config {
			c := base("/var/lib/mcpgate/mcpgate.db", "/var/lib/mcpgate/uids.json", "/var/lib/mcpgate/users")
			c.Database.Driver, c.Database.DSN, c.Worker.Group = "postgres", "postgres://mcp@db.example.com/mcp", ""
			return c
		}(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				assert.NoError(t, err)
				return
			}
			if !assert.Error(t, err) {
				return
			}
			assert.Len(t, strings.Split(err.Error(), "\n"), len(tt.want), "%v", err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
