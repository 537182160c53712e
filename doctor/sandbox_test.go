package doctor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/sandbox"
)

// TestDoctorReportsSandbox: doctor says which Landlock ABI and seccomp the
// kernel offers, and fails only where worker.sandbox.require would refuse
// to start workers.
func TestDoctorReportsSandbox(t *testing.T) {
	for _, c := range []struct {
		name             string
		sup              sandbox.Support
		enabled, require bool
		want             Status
		detail           string
	}{
		{"whole rule set", sandbox.Support{LandlockABI: 7, Seccomp: true}, true, false, OK, "Landlock ABI 7, seccomp true"},
		{"old kernel, best effort", sandbox.Support{LandlockABI: 3, Seccomp: true}, true, false, Warn, "no TCP rules"},
		{"old kernel, required", sandbox.Support{LandlockABI: 5, Seccomp: true}, true, true, Fail, "no signal or abstract Unix socket scoping"},
		{"no Landlock", sandbox.Support{Seccomp: true}, true, false, Warn, "Landlock ABI 0"},
		{"turned off", sandbox.Support{LandlockABI: 7, Seccomp: true}, false, false, Warn, "unconfined"},
	} {
		t.Run(c.name, func(t *testing.T) {
			orig := probeSandbox
			probeSandbox = func() sandbox.Support { return c.sup }
			t.Cleanup(func() { probeSandbox = orig })
			cfg := config.Default()
			cfg.Worker.Sandbox.Enabled, cfg.Worker.Sandbox.Require = c.enabled, c.require
			r := &Report{}
			checkSandbox(r, cfg)
			got, ok := r.Find("sandbox")
			require.True(t, ok)
			assert.Equal(t, c.want, got.Status, got.Detail)
			assert.Contains(t, got.Detail, c.detail)
		})
	}
}
