package worker

import (
	"time"

	"github.com/mcpgate/mcpgate/options"
)

// Defaults of LauncherOptions; config takes its defaults from these.
const (
	// DefaultServerName is serverInfo.name when LauncherOptions.ServerName
	// is empty.
	DefaultServerName = "mcpgate"
	// DefaultStopGrace is the time between SIGTERM and SIGKILL.
	DefaultStopGrace = 5 * time.Second
	// DefaultPoolSize: sessions started one after another found a
	// pre-started worker every time already at size 1; four also cover a
	// burst of four concurrent starts (a client reconnecting its
	// sessions), for about 2 MiB of private memory each (docs/gateway.md,
	// docs/benchmarks.md). LauncherOptions.PoolSize 0 is no pool, so this is
	// what mcpgate serve starts from.
	DefaultPoolSize = 4
	// MaxPoolSize bounds LauncherOptions.PoolSize.
	MaxPoolSize = 256
)

// Bounds of MaxMessageBytes that Validate accepts: above the largest
// answer of the built-in worker, below what one gateway should buffer.
const (
	minMessageBytes = 1 << 20
	maxMessageBytes = 1 << 30
)

// Validate reports every option that cannot work, each as an
// *options.Error naming its field. Zero values stand for the defaults.
func (o LauncherOptions) Validate() error {
	var p options.Problems
	if o.StopGrace < 0 {
		p.Add("StopGrace", "%v is negative; use a positive duration such as 30s (0 means the default)", o.StopGrace)
	}
	if o.MaxMessageBytes < 0 || o.MaxMessageBytes > maxMessageBytes || o.MaxMessageBytes > 0 && o.MaxMessageBytes < minMessageBytes {
		p.Add("MaxMessageBytes", "%d is outside 1MiB to 1GiB; use a size such as 64MiB, above the worker's largest answer (0 means the default)", o.MaxMessageBytes)
	}
	if o.PoolSize < 0 || o.PoolSize > MaxPoolSize {
		p.Add("PoolSize", "%d is outside 0 (off) to %d; each pre-started worker holds an idle process (about 2 MiB private memory)", o.PoolSize, MaxPoolSize)
	}
	return p.Err("worker")
}
