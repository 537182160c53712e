package tools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckFrame(t *testing.T) {
	tests := []struct {
		line string
		code int    // 0: passed to the server
		id   string // of the error answer
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, ""},
		{`  {"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, 0, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, 0, ""},
		{`not json`, -32700, "null"},
		{`{"jsonrpc":"2.0"`, -32700, "null"},
		{`[]`, -32600, "null"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]`, -32600, "null"},
		{`{"id":"x","method":"ping"}`, -32600, `"x"`},
		{`"a string"`, -32600, "null"},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, -32600, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			reply := check([]byte(tt.line))
			if tt.code == 0 {
				assert.Nil(t, reply)
				return
			}
			var got struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(reply, &got))
			assert.Equal(t, tt.code, got.Error.Code)
			assert.Equal(t, tt.id, string(got.ID))
		})
	}
}
