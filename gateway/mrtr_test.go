package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModernParallelQuestionsOfA2025Worker: a 2025 worker that asks two
// questions at once (as the go-sdk's own compatibility layer does) gets
// one input_required result listing both; a retry that answers one is asked
// the other; the call then completes. Before, every question answered the
// client's request once more, the stream never finished and the call hung.
func TestModernParallelQuestionsOfA2025Worker(t *testing.T) {
	_, url := principalGateway(t, nil, Options{})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	call := func(id, extra string) map[string]any {
		t.Helper()
		if extra != "" {
			extra = "," + extra
		}
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"ask2","arguments":{"text":"q"}` + extra + `,` + meta + `}}`
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang fails, not stalls, the test
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			protoHdr: "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask2", "X-Test-User": "alice"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", m)
		return m
	}
	questions := func(m map[string]any) (keys []string, state string) {
		t.Helper()
		res := m["result"].(map[string]any)
		require.Equal(t, "input_required", res["resultType"], "%v", m)
		for k := range res["inputRequests"].(map[string]any) {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys, res["requestState"].(string)
	}
	answer := func(key, text string) string {
		return `"` + key + `":{"role":"assistant","model":"m","content":{"type":"text","text":"` + text + `"}}`
	}

	keys, state := questions(call("1", ""))
	require.Len(t, keys, 2, "one input_required result lists both questions")
	// The first answered only: the second is asked again, alone.
	left, state := questions(call("2", `"requestState":"`+state+`","inputResponses":{`+answer(keys[0], "A")+`}`))
	require.Equal(t, keys[1:], left)
	m := call("3", `"requestState":"`+state+`","inputResponses":{`+answer(keys[1], "B")+`}`)
	assert.Equal(t, "sampled: A, B", resultText(m))

	// Both answered at once.
	keys, state = questions(call("4", ""))
	require.Len(t, keys, 2)
	m = call("5", `"requestState":"`+state+`","inputResponses":{`+answer(keys[0], "C")+`,`+answer(keys[1], "D")+`}`)
	assert.Equal(t, "sampled: C, D", resultText(m))
}

// TestModernSDKClientParallelQuestions: the go-sdk client answers the
// worker's two questions of one input_required result and gets the call's
// result.
func TestModernSDKClientParallelQuestions(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	cs := connectModern(t, srv.URL, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: strings.ToUpper(text)}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang fails, not stalls, the test
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask2", Arguments: map[string]any{"text": "x"}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "sampled: X 1, X 2", res.Content[0].(*mcp.TextContent).Text)
}

// TestModernAbandonedInputRequestLeavesOthersAsking: a client that never
// retries leaves its call waiting in the worker; that call is over for its
// client, so the next call's question still reaches its own client.
func TestModernAbandonedInputRequestLeavesOthersAsking(t *testing.T) {
	_, url := principalGateway(t, nil, Options{})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	for _, id := range []string{"1", "2"} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"sample","arguments":{"text":"q` + id + `"},` + meta + `}}`
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "sample", "X-Test-User", "alice")
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		res := m["result"].(map[string]any)
		require.Equal(t, "input_required", res["resultType"], "call %s: %s", id, out)
		for _, q := range res["inputRequests"].(map[string]any) {
			text := q.(map[string]any)["params"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"]
			assert.Equal(t, "q"+id, text, "call %s got its own question", id)
		}
	}
}
