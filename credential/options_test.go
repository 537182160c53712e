package credential_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/options"
)

func TestValidate(t *testing.T) {
	ok := credential.Credential{Env: "GITHUB_TOKEN", From: credential.FromTokenExchange, Audience: "github-mcp"}
	tests := []struct {
		name   string
		o      credential.Options
		fields []string
	}{
		{"fine", credential.Options{Credentials: []credential.Credential{ok,
			{EnvFile: "JIRA_TOKEN_FILE", From: credential.FromFile, Dir: "/etc/mcpgate/secrets"},
			{Env: "SONAR", From: credential.FromStatic, Path: "/etc/mcpgate/sonar"}}}, nil},
		{"no target", credential.Options{Credentials: []credential.Credential{{From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Env"}},
		{"two targets", credential.Options{Credentials: []credential.Credential{{Env: "A", EnvFile: "B", From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Env"}},
		{"reserved", credential.Options{Credentials: []credential.Credential{{Env: "MCPGATE_WORKER_USER", From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Env"}},
		{"bad env name", credential.Options{Credentials: []credential.Credential{{Env: "A=B", From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Env"}},
		{"header on a stdio worker", credential.Options{Credentials: []credential.Credential{{Header: "Authorization", From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Header"}},
		{"env on a remote server", credential.Options{Remote: true, Credentials: []credential.Credential{ok}}, []string{"Credentials[0].Env"}},
		{"header fine on a remote server", credential.Options{Remote: true, Credentials: []credential.Credential{{Header: "Authorization", Prefix: "Bearer ", From: credential.FromTokenExchange, Audience: "a"}}}, nil},
		{"header the worker would read as a comment", credential.Options{Remote: true, Credentials: []credential.Credential{{Header: "#X-Key", From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Header"}},
		{"prefix without header", credential.Options{Credentials: []credential.Credential{{Env: "A", Prefix: "Bearer ", From: credential.FromStatic, Path: "/x"}}}, []string{"Credentials[0].Prefix"}},
		{"duplicate", credential.Options{Credentials: []credential.Credential{ok, ok}}, []string{"Credentials[1].Env"}},
		{"exchange without audience", credential.Options{Credentials: []credential.Credential{{Env: "A", From: credential.FromTokenExchange}}}, []string{"Credentials[0].Audience"}},
		{"file without dir", credential.Options{Credentials: []credential.Credential{{Env: "A", From: credential.FromFile, Dir: "rel"}}}, []string{"Credentials[0].Dir"}},
		{"static without path", credential.Options{Credentials: []credential.Credential{{Env: "A", From: credential.FromStatic}}}, []string{"Credentials[0].Path"}},
		{"unknown source", credential.Options{Credentials: []credential.Credential{{Env: "A", From: "vault"}}}, []string{"Credentials[0].From"}},
		{"keys of another source", credential.Options{Credentials: []credential.Credential{{Env: "A", From: credential.FromStatic, Path: "/x", Dir: "/d", Audience: "a"}}}, []string{"Credentials[0].Audience", "Credentials[0].Dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range options.Errors(tt.o.Validate()) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.fields, got)
		})
	}
}
