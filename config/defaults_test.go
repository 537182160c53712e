package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/tools/db"
)

// TestDefaultsAreThePackages: a default exists once, as a package's
// exported Default*. Configuration declares none of its own as a number:
// its Default* constants, its bindings and applyDefaults name the
// packages' (or derive from other keys), and the functions where a package
// fills in its options' defaults name its constants too. A literal here is
// a second default that can drift from the first.
func TestDefaultsAreThePackages(t *testing.T) {
	scan := []struct {
		dir   string
		funcs map[string]bool // only these functions; nil: package-level declarations and every function
	}{
		{".", nil},
		{"../gateway", map[string]bool{"withDefaults": true, "DefaultListenerOptions": true}},
		{"../tools/db", map[string]bool{"WithDefaults": true}},
		{"../auth", map[string]bool{"normalize": true}},
		{"../worker", map[string]bool{"NewLauncher": true}},
		{"../audit", map[string]bool{"New": true}},
	}
	for _, s := range scan {
		files, err := filepath.Glob(filepath.Join(s.dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, lit := range literalDefaults(f, s.funcs) {
				t.Errorf("%s: default %s written as a literal; use (or add) the package's exported Default*", fset.Position(lit.Pos()), lit.Value)
			}
		}
	}
}

// literalDefaults finds numeric literals that set a default: in config,
// in a Default*/Max* constant, a binding's default or applyDefaults; in a
// package, assigned to a field in one of funcs.
func literalDefaults(f *ast.File, funcs map[string]bool) []*ast.BasicLit {
	var out []*ast.BasicLit
	seen := map[token.Pos]bool{}
	numbers := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && (lit.Kind == token.INT || lit.Kind == token.FLOAT) && lit.Value != "0" && lit.Value != "1" && !seen[lit.Pos()] {
				seen[lit.Pos()] = true
				out = append(out, lit)
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if funcs != nil {
				continue
			}
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.ValueSpec:
					for i, name := range spec.Names {
						if (strings.HasPrefix(name.Name, "Default") || strings.HasPrefix(name.Name, "MaxPool")) && i < len(spec.Values) {
							numbers(spec.Values[i])
						}
						if strings.HasSuffix(name.Name, "Keys") && i < len(spec.Values) {
							numbers(spec.Values[i]) // the binding tables
						}
					}
				}
			}
		case *ast.FuncDecl:
			if funcs == nil {
				if d.Name.Name == "applyDefaults" || d.Name.Name == "preset" || d.Name.Name == "applyBoundDefaults" {
					numbers(d.Body)
				}
				continue
			}
			if !funcs[d.Name.Name] || d.Body == nil {
				continue
			}
			ast.Inspect(d.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok {
					for i, lhs := range as.Lhs {
						if _, field := lhs.(*ast.SelectorExpr); field && i < len(as.Rhs) {
							numbers(as.Rhs[i])
						}
					}
				}
				if kv, ok := n.(*ast.KeyValueExpr); ok {
					numbers(kv.Value)
				}
				return true
			})
		}
	}
	return out
}

// TestBindingsTakeThePackagesDefaults: where a package fills in a zero
// option itself, the default config writes for the key is the same value,
// so the gateway behaves alike with a key left out of the file and with
// the option left zero.
func TestBindingsTakeThePackagesDefaults(t *testing.T) {
	for _, tc := range []struct {
		table    []binding
		defaults any
	}{
		{gatewayKeys, gateway.Options{}.WithDefaults()},
		{databaseKeys, db.Config{}.WithDefaults()},
	} {
		v := reflect.ValueOf(&tc.defaults).Elem().Elem()
		pv := reflect.New(v.Type()).Elem()
		pv.Set(v)
		for _, b := range tc.table {
			if b.def == nil {
				continue
			}
			got := optionField(pv, b.field)
			if got.IsZero() {
				continue // the package has no default of its own: DrainMin, the DB budget
			}
			want := reflect.ValueOf(b.def).Convert(got.Type())
			if !got.Equal(want) {
				t.Errorf("%s: config's default %v, but %s defaults %s to %v", b.key, want, v.Type(), b.field, got)
			}
		}
	}
	// Every default config writes is one a key keeps after a load.
	c := Default()
	for _, table := range allBindings {
		for _, b := range table {
			if b.def != nil && c.keyValue(b.key).IsZero() {
				t.Errorf("%s: no default after Default()", b.key)
			}
		}
	}
}

// TestEveryKeyIsBound: each key belongs to one table or is config's own,
// so that its validation and its default have one home.
func TestEveryKeyIsBound(t *testing.T) {
	bound := map[string]int{}
	for _, table := range allBindings {
		for _, b := range table {
			bound[b.key]++
		}
	}
	for _, k := range Keys() {
		if bound[k] > 1 && k != "server.title" && k != "server.public_url" {
			t.Errorf("%s is bound %d times", k, bound[k])
		}
	}
	for k := range bound {
		if _, ok := lookupKey(k); !ok {
			t.Errorf("binding of %s, which is not a key", k)
		}
	}
}

// TestPackageErrorsNameKeysNotValues: a package's message names other
// fields, which become keys; a value the operator wrote is shown as
// written, even when it spells a field's name.
func TestPackageErrorsNameKeysNotValues(t *testing.T) {
	c := Default()
	c.Server.ReplicaID = "ReadOnly"
	c.Limits.MaxSessions, c.Limits.MaxSessionsPerUser = 4, 5
	ps := Problems(c.Validate())
	got := map[string]string{}
	for _, p := range ps {
		got[p.Key] = p.Message
	}
	assert.Contains(t, got["server.replica_id"], `"ReadOnly" is not a DNS label`)
	assert.Contains(t, got["limits.max_sessions_per_user"], "5 is more than limits.max_sessions 4; lower it or raise limits.max_sessions")
}
