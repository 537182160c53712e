package gateway

import (
	"encoding/json"
	"testing"
)

// progressCorpus: params as clients send them and as an attacker would,
// for holding the progress token's scan to encoding/json (docs/design.md,
// Two readers).
var progressCorpus = []string{
	`{"name":"echo","arguments":{"name":"x"}}`,
	` { "name" : "echo" , "_meta" : { "progressToken" : 1 } } `,
	`{"name":"write","Name":"echo"}`,
	`{"name":"echo","name":"write"}`,
	`{"n\u0061me":"echo","_meta":{"progressToken":2}}`,
	`{"name":7,"_meta":{"progressToken":3}}`, `{"name":null}`, `{"_meta":null}`, `{"_meta":[]}`,
	`{"_meta":{"progressToken":"t","progresstoken":"u"}}`, `{"_Meta":{"progressToken":4}}`,
	`{"arguments":{}}`, `{}`, `[]`, `"name"`, `null`, `7`,
}

// FuzzProgressToken holds the progress token's scan to encoding/json on
// any params a decoded message can carry (valid JSON).
func FuzzProgressToken(f *testing.F) {
	for _, in := range progressCorpus {
		f.Add([]byte(in))
	}
	f.Add([]byte(`{"name":"echo","_meta":{"progressToken":"t-1"}}`))
	f.Add([]byte(`{"_meta":{"progressToken":1,"ProgressToken":2}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // params of a decoded message are valid JSON
		}
		got, ok := scanProgressToken(json.RawMessage(in))
		if want := decodeProgressToken(json.RawMessage(in)); ok && got != want {
			t.Fatalf("scanProgressToken(%q) = %q; encoding/json: %q", in, got, want)
		}
	})
}
