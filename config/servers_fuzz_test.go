package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzServersFile: any file with a servers list either loads or is
// refused with an error, never a panic, and what loads gives each server
// a configuration of its own whose resource ends in its path when its
// name is one Validate accepts.
func FuzzServersFile(f *testing.F) {
	f.Add([]byte(serversYAML))
	f.Add([]byte("servers:\n  - name: a\n    limits: {memory: 1GiB}\n    database: {path: x.db}\n"))
	f.Add([]byte("servers: [{name: a, env: {A: 1}, command: \"x 'y z'\"}, 5, [], {database: null}]\n"))
	f.Add([]byte("servers:\n  - {Name: A, LIMITS: {Memory: 1}}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Loader{Getenv: func(string) string { return "" }}.Load(p, nil)
		if err != nil {
			return
		}
		for _, sc := range c.ServerConfigs() {
			if CheckServerName(sc.ServerName()) != "" && sc.Entry() != nil {
				continue // Validate refuses it
			}
			if r := sc.Resource(); len(r) < len(sc.MountPath()) || r[len(r)-len(sc.MountPath()):] != sc.MountPath() {
				t.Fatalf("resource %q does not end in %q", r, sc.MountPath())
			}
		}
	})
}
