package gateway

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestModernParamHeaderAmbiguousArgument: an x-mcp-header argument the
// gateway cannot read unambiguously (a key twice, a case twin) must be
// refused, not treated as absent: the worker reads one of the values while
// an intermediary routing on Mcp-Param-* saw no header at all.
func TestModernParamHeaderAmbiguousArgument(t *testing.T) {
	_, url := principalGateway(t, []string{sdkWorker}, Options{})
	for _, args := range []string{
		`{"region":"eu-west","region":"us-east"}`,
		`{"region":"eu-west","Region":"us-east"}`,
		`{"Region":"us-east"}`,
	} {
		body := modernBody("1", "tools/call", `"name":"region","arguments":`+args)
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "region",
			"X-Test-User", "alice")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", args, out)
		assert.Contains(t, out, `"code":-32020`, args)
		assert.NotContains(t, out, "region us-east", args)
	}
}
