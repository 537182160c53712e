package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// shellWordKeys are the lists whose string form is split like shell words:
// command arguments and environment values may contain commas.
var shellWordKeys = map[string]bool{"worker.command": true, "worker.env": true}

// normalizeFileValue turns the YAML forms of a value that viper would
// mishandle into the form the decoder takes.
func (k key) normalizeFileValue(val any) (any, error) {
	switch {
	case k.name == "worker.env":
		if m, ok := val.(map[string]any); ok {
			env := make([]string, 0, len(m))
			for name, v := range m {
				s := ""
				if v != nil {
					s = fmt.Sprint(v)
				}
				env = append(env, name+"="+s)
			}
			sort.Strings(env)
			return env, nil
		}
		fallthrough
	case k.name == "server.listen":
		// A list (a TCP address and a socket) is held as one string.
		if l, ok := val.([]any); ok {
			parts := make([]string, 0, len(l))
			for _, e := range l {
				parts = append(parts, fmt.Sprint(e))
			}
			return strings.Join(parts, ","), nil
		}
	case shellWordKeys[k.name]:
		if s, ok := val.(string); ok {
			return SplitWords(s)
		}
	}
	return val, nil
}

// decodeString turns an environment or flag string into the key's type.
func (k key) decodeString(s string) (any, error) {
	if k.typ.Kind() != reflect.Slice {
		return k.decode(s)
	}
	if shellWordKeys[k.name] {
		words, err := SplitWords(s)
		if err != nil {
			return nil, err
		}
		return k.decode(words)
	}
	return k.decode(splitList(s))
}

// decode converts a raw value to the key's type with the same rules the file
// goes through, so that a bad environment value is reported by its name.
func (k key) decode(raw any) (any, error) {
	out := reflect.New(k.typ)
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:       decodeHook(),
		WeaklyTypedInput: true,
		Result:           out.Interface(),
	})
	if err != nil {
		return nil, err
	}
	if err := d.Decode(raw); err != nil {
		return nil, errors.Join(flattenDecodeErrors(err)...)
	}
	return out.Elem().Interface(), nil
}

// splitList splits a list given as one string on commas and white space.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
}

// SplitWords splits a command line into words like a POSIX shell without
// expansion of any kind: blanks (space, tab, CR, LF) separate, single quotes
// keep everything, double quotes keep everything but a backslash before " or
// \, a bare backslash escapes the next character. It is how worker.command
// and worker.env are read from one string, and how the benchmark harness
// reads its command lines. The error (an unterminated quote) does not name
// the value; the caller does.
func SplitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
)

// decodeHook converts durations ("30s"), sizes ("8MiB") and lists given as
// one string. A bare number is refused as a duration: 30 would be 30ns.
func decodeHook() mapstructure.DecodeHookFunc {
	return mapstructure.ComposeDecodeHookFunc(
		func(_ reflect.Type, t reflect.Type, data any) (any, error) {
			if t != durationType {
				return data, nil
			}
			switch d := data.(type) {
			case string:
				if strings.TrimSpace(d) == "0" {
					return time.Duration(0), nil
				}
				v, err := time.ParseDuration(strings.TrimSpace(d))
				if err != nil {
					return nil, fmt.Errorf("invalid duration %q; use a number with a unit, such as 30s, 5m or 1h30m", d)
				}
				return v, nil
			case int, int64, uint64, float64:
				if reflect.ValueOf(d).IsZero() {
					return time.Duration(0), nil
				}
				return nil, fmt.Errorf("duration %v has no unit; write it with one, such as %vs", d, d)
			}
			return data, nil
		},
		func(_ reflect.Type, t reflect.Type, data any) (any, error) {
			if t != byteSizeType {
				return data, nil
			}
			switch d := data.(type) {
			case string:
				return parseByteSize(d)
			case float64:
				if d != float64(int64(d)) {
					return nil, fmt.Errorf("size %v is not a whole number of bytes", d)
				}
				return ByteSize(d), nil
			}
			return data, nil
		},
		func(f reflect.Type, t reflect.Type, data any) (any, error) {
			if f.Kind() != reflect.String || t.Kind() != reflect.Slice {
				return data, nil
			}
			return splitList(data.(string)), nil
		},
	)
}

// flattenDecodeErrors turns mapstructure's joined errors into one error per
// key, each reading "KEY: problem".
func flattenDecodeErrors(err error) []error {
	var out []error
	var walk func(error, string)
	walk = func(err error, name string) {
		var de *mapstructure.DecodeError
		if errors.As(err, &de) && de == err {
			if de.Name() != "" {
				name = de.Name()
			}
			walk(de.Unwrap(), name)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e, name)
			}
			return
		}
		if w := errors.Unwrap(err); w != nil && strings.HasPrefix(err.Error(), "decoding failed") {
			walk(w, name)
			return
		}
		var pe *mapstructure.ParseError
		if errors.As(err, &pe) {
			err = fmt.Errorf("%q is not %s", fmt.Sprint(pe.Value), typeWords(pe.Expected.Type()))
		}
		if name == "" {
			out = append(out, err)
			return
		}
		out = append(out, fmt.Errorf("%s: %w", name, err))
	}
	walk(err, "")
	sort.Slice(out, func(i, j int) bool { return out[i].Error() < out[j].Error() })
	return out
}

// typeWords says in words what a value of type t looks like.
func typeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}
