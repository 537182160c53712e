package jsonrpc

import "testing"

func TestSetPlainMember(t *testing.T) {
	for _, tc := range []struct {
		obj, name, val, want string
		ok                   bool
	}{
		{`{"name":"db__q","arguments":{"name":"x"}}`, "name", `"q"`, `{"name":"q","arguments":{"name":"x"}}`, true},
		{` { "a" : 1 , "name" : "x" } `, "name", `"y"`, ` { "a" : 1 , "name" : "y" } `, true},
		{`{"a":1}`, "name", `"y"`, "", false},
		{`{"name":"a","name":"b"}`, "name", `"y"`, "", false},
		{`{"name":"a","Name":"b"}`, "name", `"y"`, "", false},
		{`{"n\u0061me":"a"}`, "name", `"y"`, "", false},
		{`[1]`, "name", `"y"`, "", false},
	} {
		got, ok := SetPlainMember([]byte(tc.obj), tc.name, []byte(tc.val))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("SetPlainMember(%s): got %q %v, want %q %v", tc.obj, got, ok, tc.want, tc.ok)
		}
	}
}
