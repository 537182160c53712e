package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/mcpgate/mcpgate/tools/db"
)

// Caps on what one tool call sends back, whatever the database holds: a
// comment, a view's source or an error message can be as long as a value
// (16 MiB on SQLite, 1 GB on PostgreSQL), and one oversized answer used to
// end the worker's session at the gateway. Every tool's
// result and error passes through capResult and capMessage, in handler.
const (
	// MaxFieldBytes caps one string of a result's structuredContent.
	MaxFieldBytes = DefaultMaxResultBytes
	// MaxStructuredBytes caps a result's structuredContent as a whole;
	// over it, the strings are cut to db.DefaultMaxCell, and if that is not
	// enough the structured content is left out (the text stays).
	MaxStructuredBytes = 16 << 20
	// MaxErrorBytes caps a tool error's message.
	MaxErrorBytes = 16 << 10
	// maxCutPaths bounds the names listed in truncatedFields.
	maxCutPaths = 20
)

// TruncatedFields is the key capResult adds to a structuredContent object
// whose strings it cut: the JSON paths of the cut strings (at most 20, then
// "…"). Each cut string ends in "… [N bytes]" with its true length, as a cut
// value of a result row does.
const TruncatedFields = "truncatedFields"

// capMessage cuts an error message to MaxErrorBytes.
func capMessage(s string) string { return db.Cut(s, MaxErrorBytes) }

// capResult returns v, or, when a string in its JSON form is longer than
// MaxFieldBytes or the whole is over MaxStructuredBytes, the JSON with
// those strings cut and a TruncatedFields list. Key order is kept.
func capResult(v any) any {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil || len(raw) <= MaxFieldBytes {
		return v // no string in it can be too long; the SDK reports a marshal error
	}
	for _, limit := range []int{MaxFieldBytes, db.DefaultMaxCell} {
		out, cut, err := cutStrings(raw, limit)
		if err != nil {
			return v
		}
		if len(out) <= MaxStructuredBytes {
			if !cut {
				return v
			}
			return json.RawMessage(out)
		}
	}
	return map[string]any{
		TruncatedFields: []string{"*"},
		"note":          fmt.Sprintf("the structured content was over %d bytes even with every string cut to %d bytes, and is left out; the text content has the result", MaxStructuredBytes, db.DefaultMaxCell),
	}
}

// frame is one open JSON object or array while cutStrings copies.
type frame struct {
	object bool
	n      int    // members or elements written so far
	key    string // the current member's name
	inKey  bool   // the next string is a member name
}

// cutStrings copies the JSON document raw, cutting every string value over
// limit bytes, and adds TruncatedFields to a top-level object when it cut
// any. It reports whether it cut.
func cutStrings(raw []byte, limit int) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(min(len(raw), MaxStructuredBytes))
	var stack []*frame
	var paths []string
	cuts := 0
	path := func() string {
		var b bytes.Buffer
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.n) + "]")
			}
		}
		return b.String()
	}
	// value starts a value: a comma when it is not the first element of
	// an array (an object's comma comes before the key).
	value := func() {
		if len(stack) > 0 && !stack[len(stack)-1].object && stack[len(stack)-1].n > 0 {
			out.WriteByte(',')
		}
	}
	// done ends a value in its container.
	done := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		f.n++
		if f.object {
			f.inKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				value()
				out.WriteByte(byte(t))
				stack = append(stack, &frame{object: t == '{', inKey: t == '{'})
			default:
				if len(stack) == 1 && stack[0].object && cuts > 0 {
					if stack[0].n > 0 {
						out.WriteByte(',')
					}
					if cuts > len(paths) {
						paths = append(paths, "…")
					}
					names, _ := json.Marshal(paths)
					out.WriteString(`"` + TruncatedFields + `":`)
					out.Write(names)
				}
				out.WriteByte(byte(t))
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if f := stack[len(stack)-1:]; len(f) == 1 && f[0].inKey {
				if f[0].n > 0 {
					out.WriteByte(',')
				}
				f[0].key, f[0].inKey = t, false
				writeJSON(&out, t)
				out.WriteByte(':')
				continue
			}
			value()
			if len(t) > limit {
				if cuts++; len(paths) < maxCutPaths {
					paths = append(paths, path())
				}
				t = db.Cut(t, limit)
			}
			writeJSON(&out, t)
			done()
		default:
			value()
			writeJSON(&out, t)
			done()
		}
	}
	return out.Bytes(), cuts > 0, nil
}

// writeJSON writes v's JSON form, as json.Marshal would.
func writeJSON(w *bytes.Buffer, v any) {
	b, _ := json.Marshal(v) // strings, json.Number, bool and nil always marshal
	w.Write(b)
}
