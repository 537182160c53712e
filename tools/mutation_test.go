package tools

import (
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/stretchr/testify/assert"
)

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
		assert.Equal(t, tt.want, roleChange(db.PostgresLexer.Keywords(tt.sql, 3)), tt.sql)
	}
}
