package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawPost sends body to url with the given headers (name, value pairs).
func rawDo(t testing.TB, method, url, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawSession initializes a session and returns its id.
func rawSession(t testing.TB, url string) string {
	t.Helper()
	return rawSessionWith(t, url)
}

// rawSessionWith is rawSession with extra headers on both requests.
func rawSessionWith(t testing.TB, url string, headers ...string) string {
	t.Helper()
	resp, body := rawDo(t, http.MethodPost, url, initBody, headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: got %d %s, want 200", resp.StatusCode, body)
	}
	sid := resp.Header.Get("MCP-Session-Id")
	if sid == "" {
		t.Fatal("initialize: no MCP-Session-Id")
	}
	rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append([]string{"MCP-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25"}, headers...)...)
	return sid
}
