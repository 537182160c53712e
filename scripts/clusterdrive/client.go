package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpgate/mcpgate/workerproto"
)

// client is one go-sdk client and what it has seen.
type client struct {
	name, user, version string
	cs                  *mcp.ClientSession
	replica             string // a legacy session's replica
	seq                 int
	// prefix goes before every tool name: the server's "<name>__"
	// through the combined /mcp.
	prefix string
}

// tokens mints user's tokens at the test issuer, refreshed as they expire.
func (d *driver) tokens(user string) oauth2.TokenSource {
	return (&clientcredentials.Config{
		ClientID:       "clusterdrive",
		TokenURL:       d.issuer + "/token",
		Scopes:         []string{"mcp:use", "mcp:write"},
		EndpointParams: url.Values{"resource": {d.url}, "username": {user}},
	}).TokenSource(d.ctx)
}

func (d *driver) connect(name, user, version string) (*client, error) {
	ts := d.tokens(user)
	hc := &http.Client{Transport: &oauth2.Transport{Source: ts, Base: &http.Transport{TLSClientConfig: d.tlsConfig}}}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "clusterdrive-" + name, Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(d.ctx, 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url, HTTPClient: hc, DisableStandaloneSSE: true}, opts)
	if err != nil {
		return nil, err
	}
	// The go-sdk client mirrors x-mcp-header arguments (the transaction
	// handle) only for tools it has listed.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		cs.Close()
		return nil, err
	}
	if d.rejoined {
		name = "rejoined-" + name // its rows apart from the first run's
	}
	name = d.rows + name
	cl := &client{name: name, user: user, version: version, cs: cs, prefix: d.toolPrefix}
	if version != "" {
		cl.replica = workerproto.ReplicaOf(cs.ID())
	}
	return cl, nil
}

// call runs a tool; a tool error is an error.
func (c *client) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: c.prefix + tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		return sc, fmt.Errorf("%s: tool error %v", tool, sc["error"])
	}
	return sc, nil
}

// status returns the replica whose worker answered (the replica id starts
// the worker's session or instance id).
func (c *client) status(ctx context.Context) (string, error) {
	sc, err := c.call(ctx, "status", map[string]any{})
	if err != nil {
		return "", err
	}
	id, _ := sc["sessionId"].(string)
	// Through the combined /mcp the worker's session is the server's own,
	// opened for the combined session (on its replica), not the client's.
	if c.version != "" && id != c.cs.ID() && c.prefix == "" {
		return "", fmt.Errorf("status: session %q answered for session %q", id, c.cs.ID())
	}
	return workerproto.ReplicaOf(id), nil
}

// insert writes one row, recording it as acknowledged when the gateway
// says it committed.
func (d *driver) insert(ctx context.Context, c *client, via, handle string) error {
	c.seq++
	args := map[string]any{"sql": fmt.Sprintf("INSERT INTO cluster_writes (client, seq, via) VALUES ('%s', %d, '%s')", c.name, c.seq, via)}
	if handle != "" {
		args["transaction"] = handle
	}
	if _, err := c.call(ctx, "execute_sql", args); err != nil {
		return err
	}
	if handle != "" {
		return nil // acknowledged by the handle's commit
	}
	if c.version != "" {
		// A 2025-11-25 session holds one transaction until commit.
		if _, err := c.call(ctx, "commit", map[string]any{}); err != nil {
			return err
		}
	}
	d.ack(c.name, c.seq)
	return nil
}

func (d *driver) ack(name string, seq int) {
	d.mu.Lock()
	d.acked[name+"/"+strconv.Itoa(seq)] = true
	d.mu.Unlock()
}
