package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// memberCorpus: objects as clients send them and as an attacker would,
// for holding the scans of toolName and exactMember to encoding/json's
// tokenizer (docs/design.md, Two readers).
var memberCorpus = []string{
	`{"name":"echo","arguments":{"name":"x"}}`,
	`{"arguments":{"Name":"x","name":"y"},"name":"echo"}`,
	` { "name" : "echo" , "_meta" : { "progressToken" : 1 } } `,
	`{"n\u0061me":"echo"}`,
	`{"name":"echo","n\u0061me":"write"}`,
	`{"name":"write","Name":"echo"}`,
	`{"Name":"echo"}`,
	`{"NAME":"echo","name":"write"}`,
	`{"name":"echo","name":"write"}`,
	`{"name":"echo","name":"echo"}`,
	`{"nam\u0065":"write","name":"echo"}`,
	"{\"na\u212ae\":\"write\"}",                       // Kelvin sign: folds to k, so not to "name" (a near miss)
	"{\"argument\u017f\":{\"x\":1},\"arguments\":{}}", // long s: folds to s, so equal to "arguments" ignoring case
	"{\"\u212a\":1,\"k\":2}",                          // Kelvin sign: folds to k
	"{\"name\":\"wr\\u0069te\"}",
	"{\"name\":\"\xff\"}", // invalid UTF-8 in the value
	`{"name":7}`, `{"name":null}`, `{"name":{"name":"x"}}`, `{"name":["echo"]}`, `{"name":""}`,
	`{"arguments":{}}`, `{}`, `[]`, `["name","echo"]`, `"name"`, `null`, `7`,
	`{"name":"echo"`, `{"name":"echo"}x`, `{"name":"echo",}`, `{"name" "echo"}`, ``, ` `,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"status"}`,
	`{"a":"}","name":"x\"}"}`, `{"a":"\\","name":"e"}`, `{"a":[{"name":"x"}],"b":1.5e3,"name":"e"}`,
}

// TestToolNameScanAgrees: toolName's scan gives encoding/json's answer on
// every input of the corpus.
func TestToolNameScanAgrees(t *testing.T) {
	for _, in := range memberCorpus {
		name, ok := toolName(json.RawMessage(in))
		wantName, wantOK := decodeToolName(json.RawMessage(in))
		if ok != wantOK || name != wantName {
			t.Errorf("toolName(%s) = %q %v; encoding/json: %q %v", in, name, ok, wantName, wantOK)
		}
	}
}

// TestExactMemberScanAgrees: exactMember's scan gives encoding/json's
// answer on every input of the corpus, for several keys.
func TestExactMemberScanAgrees(t *testing.T) {
	for _, in := range memberCorpus {
		for _, key := range []string{"name", "arguments", "_meta", "a", "k", "missing"} {
			v, ok := exactMember(json.RawMessage(in), key)
			wantV, wantOK := decodeExactMember(json.RawMessage(in), key)
			if ok != wantOK || !bytes.Equal(v, wantV) || (v == nil) != (wantV == nil) {
				t.Errorf("exactMember(%s, %q) = %s %v; encoding/json: %s %v", in, key, v, ok, wantV, wantOK)
			}
		}
	}
}

// BenchmarkToolName: a tools/call's params, by the scan and by
// encoding/json's tokenizer (what toolName did before; it runs up to three
// times a call: the audit event, the policy and the read-only check).
func BenchmarkToolName(b *testing.B) {
	params := json.RawMessage(`{"name":"query","arguments":{"sql":"SELECT * FROM order_totals ORDER BY order_id"},"_meta":{"progressToken":7}}`)
	for _, f := range []struct {
		name string
		fn   func(json.RawMessage) (string, bool)
	}{{"scan", toolName}, {"decoder", decodeToolName}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, ok := f.fn(params); !ok || n != "query" {
					b.Fatal(n, ok)
				}
			}
		})
	}
}

// BenchmarkExactMember: a 2026-07-28 request's _meta, read on every POST.
func BenchmarkExactMember(b *testing.B) {
	params := json.RawMessage(`{"name":"status","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)
	for _, f := range []struct {
		name string
		fn   func(json.RawMessage, string) (json.RawMessage, bool)
	}{{"scan", exactMember}, {"decoder", decodeExactMember}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, ok := f.fn(params, "_meta"); !ok || v == nil {
					b.Fatal(string(v), ok)
				}
			}
		})
	}
}

// FuzzToolName holds toolName's scan to encoding/json's tokenizer on any
// input, as TestToolNameScanAgrees does on the corpus.
func FuzzToolName(f *testing.F) {
	for _, in := range memberCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		name, ok := toolName(json.RawMessage(in))
		wantName, wantOK := decodeToolName(json.RawMessage(in))
		if ok != wantOK || name != wantName {
			t.Fatalf("toolName(%q) = %q %v; encoding/json: %q %v", in, name, ok, wantName, wantOK)
		}
	})
}

// FuzzExactMember holds exactMember's scan to encoding/json's tokenizer on
// any input and key.
func FuzzExactMember(f *testing.F) {
	for _, in := range memberCorpus {
		f.Add([]byte(in), "name")
		f.Add([]byte(in), "_meta")
	}
	f.Fuzz(func(t *testing.T, in []byte, key string) {
		// Callers ask for constant keys, valid UTF-8 without U+FFFD:
		// encoding/json reads invalid UTF-8 in a key as U+FFFD, so for
		// any other key the two readers disagree without either being
		// wrong.
		if !utf8.ValidString(key) || strings.ContainsRune(key, utf8.RuneError) {
			t.Skip()
		}
		v, ok := exactMember(json.RawMessage(in), key)
		wantV, wantOK := decodeExactMember(json.RawMessage(in), key)
		if ok != wantOK || !bytes.Equal(v, wantV) || (v == nil) != (wantV == nil) {
			t.Fatalf("exactMember(%q, %q) = %s %v; encoding/json: %s %v", in, key, v, ok, wantV, wantOK)
		}
	})
}

// FuzzProgressToken holds the progress token's scan to encoding/json on
// any params a decoded message can carry (valid JSON).
func FuzzProgressToken(f *testing.F) {
	for _, in := range memberCorpus {
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
