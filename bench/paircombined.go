package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// combined compares a call through the combined /mcp of a gateway
// configured with a servers list against the same call through that
// server's own path, /mcp/NAME, of the same gateway. The combined endpoint
// knows the tool by a prefixed name, found in its tools/list.
func (pe pairEnv) combined(ctx context.Context) PairResult {
	name := pe.cfg.ServersName
	res := PairResult{A: "/mcp/" + name, B: "/mcp"}
	if len(pe.cfg.Servers) == 0 || name == "" {
		res.Skipped = "no -mcpgate-servers given (a gateway configured with a servers list)"
		return res
	}
	p, endpoint, err := startHTTP(ctx, "mcpgate-servers", "", nil, pe.cfg.Servers, sessionEnv(os.Environ(), pe.cfg.ServersEnv), pe.logDir, "http")
	if err != nil {
		res.fail(err)
		return res
	}
	defer p.stop(10 * time.Second)
	named := &httpTarget{client: pe.client, endpoint: endpoint + "/" + name, procfs: pfs()}
	all := &httpTarget{client: pe.client, endpoint: endpoint, procfs: pfs()}
	a, b, ok := pe.openBoth(ctx, &res, named.open, all.open)
	if !ok {
		return res
	}
	tool, err := combinedName(ctx, b, name, pe.cfg.Trivial.Name)
	if err != nil {
		_, _ = a.Close(), b.Close()
		res.fail(err)
		return res
	}
	pe.measure(ctx, &res, a, b, tool)
	return res
}

// combinedName finds, in the combined endpoint's tools/list, the name it
// gives server's tool: the server's name, a separator, the tool's.
func combinedName(ctx context.Context, s *session, server, tool string) (string, error) {
	var names []string
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return "", fmt.Errorf("mcpbench: the combined /mcp's tools/list: %w", err)
		}
		names = append(names, t.Name)
	}
	for _, sep := range []string{"__", "_", ".", "-", "/", ":"} {
		if slices.Contains(names, server+sep+tool) {
			return server + sep + tool, nil
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, server) && strings.HasSuffix(n, tool) && len(n) > len(server)+len(tool) {
			return n, nil
		}
	}
	return "", fmt.Errorf("mcpbench: the combined /mcp lists no tool for %s's %s (it lists %d: %.200s)", server, tool, len(names), strings.Join(names, ", "))
}
