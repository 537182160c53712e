package jsonrpc

// SetPlainMember returns a copy of the object obj (valid JSON) with the
// value of its member named exactly name replaced by val, by a scan that
// decodes nothing; everything else keeps its bytes. It reports false when
// PlainMember would (obj is not an object, a key holds an escape, name
// appears twice or another key equals it ignoring case) or name is absent:
// the caller decodes then.
func SetPlainMember(obj []byte, name string, val []byte) ([]byte, bool) {
	old, ok := PlainMember(obj, name, nil)
	if !ok || old == nil {
		return nil, false
	}
	// old is a slice of obj: where it starts is how much less room it has.
	start := cap(obj) - cap(old)
	out := make([]byte, 0, len(obj)-len(old)+len(val))
	out = append(out, obj[:start]...)
	out = append(out, val...)
	return append(out, obj[start+len(old):]...), true
}
