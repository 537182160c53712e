package install

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
)

// ErrNotMCPPath is wrapped by CheckURL's error for a URL whose path is not
// a gateway's MCP endpoint (/mcp, /mcp/NAME, or a prefix before them).
var ErrNotMCPPath = errors.New("install: the URL is not an MCP endpoint: a gateway's ends in /mcp (or /mcp/NAME for one of several servers)")

// CheckURL checks a gateway URL for an entry: an absolute URL by the
// rules the gateway holds its own URLs to (https unless the host is
// loopback: a client would send its token in the clear), whose path is an
// MCP endpoint unless anyPath (a gateway behind a proxy that renames it).
func CheckURL(raw string, anyPath bool) error {
	if err := auth.CheckURL(raw); err != nil {
		return fmt.Errorf("install: --url %w", err)
	}
	u, _ := url.Parse(raw)
	p := strings.TrimSuffix(u.Path, "/")
	if !anyPath && !strings.HasSuffix(p, "/mcp") && !strings.Contains(p+"/", "/mcp/") {
		return fmt.Errorf("%w; got %q (pass --any-path if the gateway really is there)", ErrNotMCPPath, raw)
	}
	return nil
}
