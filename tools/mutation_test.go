package tools

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/stretchr/testify/assert"
)

// lowerFold is a catalog that folds like PostgreSQL; ddlTarget needs only
// Fold.
type lowerFold struct{ db.Catalog }

func (lowerFold) Fold(s string) string { return strings.ToLower(s) }

func TestDDLTarget(t *testing.T) {
	tests := []struct {
		sql        string
		ok         bool
		form       string
		target, on []string
	}{
		{"CREATE TABLE t (x int)", true, "CREATE TABLE", []string{"t"}, nil},
		{"create table if not exists S.T (x int)", true, "CREATE TABLE", []string{"s", "t"}, nil},
		{`CREATE TEMP TABLE "My"."T" (x int)`, true, "CREATE TABLE", []string{"My", "T"}, nil},
		{"CREATE TABLE pg_catalog . t (x int)", true, "CREATE TABLE", []string{"pg_catalog", "t"}, nil},
		{"CREATE /* hide */ TABLE /* me */ pg_catalog./**/t (x int)", true, "CREATE TABLE", []string{"pg_catalog", "t"}, nil},
		{"CREATE OR REPLACE VIEW v AS SELECT 1", true, "CREATE VIEW", []string{"v"}, nil},
		{"CREATE MATERIALIZED VIEW mv AS SELECT 1", true, "CREATE VIEW", []string{"mv"}, nil},
		{"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i ON ONLY s.t (x)", true, "CREATE INDEX", []string{"i"}, []string{"s", "t"}},
		{"CREATE INDEX ON pg_catalog.pg_type (typname)", true, "CREATE INDEX", nil, []string{"pg_catalog", "pg_type"}},
		{"ALTER TABLE IF EXISTS ONLY t ADD COLUMN y int", true, "ALTER TABLE", []string{"t"}, nil},
		{"ALTER INDEX i RENAME TO j", true, "ALTER INDEX", []string{"i"}, nil},
		{"DROP TABLE t", false, "DROP TABLE", nil, nil},
		{"CREATE TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END", false, "CREATE TRIGGER", nil, nil},
		{"INSERT INTO t VALUES (1)", false, "INSERT INTO", nil, nil},
		{"CREATE TABLE (x int)", false, "CREATE TABLE", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			form, target, on, ok := ddlTarget(tt.sql, lowerFold{}, ddlForms)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.form, strings.Join(form, " "))
			if tt.ok {
				assert.Equal(t, tt.target, target)
				assert.Equal(t, tt.on, on)
			}
		})
	}
}

func TestRoleChange(t *testing.T) {
	tests := []struct {
		sql  string
		want bool
	}{
		{"SET ROLE postgres", true},
		{"set local role x", true},
		{"RESET ROLE", true},
		{"SET SESSION AUTHORIZATION postgres", true},
		{"RESET ALL", true},
		{"SET search_path = x", false},
		{"SELECT 1", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, roleChange(db.Keywords(tt.sql, 3)), tt.sql)
	}
}
