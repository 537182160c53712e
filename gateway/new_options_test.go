package gateway

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/options"
	"github.com/mcpgate/mcpgate/worker"
)

// TestNewRefusesInvalidOptions: a program that builds the gateway without
// config gets Validate's answer from New, not a gateway that misbehaves
// (a negative body limit would refuse every POST; a per-user share above
// the total could never be reached).
func TestNewRefusesInvalidOptions(t *testing.T) {
	l := launcher(t, nil, worker.LauncherOptions{})
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"negative body limit", Options{MaxBodyBytes: -1}, "MaxBodyBytes"},
		{"negative write timeout", Options{WriteTimeout: -1}, "WriteTimeout"},
		{"per-user share above the total", Options{MaxSessions: 2, MaxSessionsPerUser: 3}, "MaxSessionsPerUser"},
		{"stream lifetime under a second", Options{MaxStreamLifetime: 1}, "MaxStreamLifetime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(l, tc.opts)
			if err == nil {
				_ = g.Close(context.Background())
				t.Fatal("New accepted options Validate refuses")
			}
			errs := options.Errors(err)
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("New: %v; want one *options.Error on %s", err, tc.field)
			}
		})
	}
}
