package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts the environment name of every key: auth.issuer is read
// from MCPGATE_AUTH_ISSUER.
const EnvPrefix = "MCPGATE_"

// EnvConfigFile names the configuration file when neither Load's path nor
// the --config flag does.
const EnvConfigFile = EnvPrefix + "CONFIG"

// LegacyEnv maps keys to the environment names the original GemStone
// deployment (run-auth-server.sh) used. They are read when the key's
// MCPGATE_ name is unset or empty: the MCPGATE_ name wins when both are set.
var LegacyEnv = map[string]string{
	"auth.write_scope":  "MCP_WRITE_SCOPE",
	"auth.extra_scopes": "MCP_EXTRA_SCOPES",
	"auth.user_claim":   "MCP_USERID_CLAIM",
}

// Loader loads a Config. Its zero value reads the process environment.
type Loader struct {
	// Getenv reads one environment variable; an empty result counts as
	// unset. Default os.Getenv. Tests inject a map lookup.
	Getenv func(string) string
}

// Load is Loader{}.Load: the configuration from the process environment.
func Load(path string, flags *pflag.FlagSet) (*Config, error) {
	return Loader{}.Load(path, flags)
}

// Load builds the configuration in four layers, each overriding the one
// before: the defaults; the YAML file at path (when path is empty, the
// --config flag, then MCPGATE_CONFIG; none at all is fine); the environment
// (MCPGATE_<SECTION>_<KEY>, plus the LegacyEnv names); and the flags in flags
// that were set on the command line (see Flags). Lists in the environment
// and flags are space- or comma-separated, except worker.command and
// worker.env, which are split like shell words.
//
// Unknown keys in the file, values of the wrong type, bad durations and sizes
// are errors naming the key; all of them are returned at once, joined. Load
// does not Validate: call Validate on the result.
func (l Loader) Load(path string, flags *pflag.FlagSet) (*Config, error) {
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if path == "" && flags != nil {
		if f := flags.Lookup("config"); f != nil && f.Changed {
			path = f.Value.String()
		}
	}
	if path == "" {
		path = getenv(EnvConfigFile)
	}

	v := viper.New()
	var errs []error
	if path != "" {
		m, ferrs := readFile(path)
		errs = append(errs, ferrs...)
		if m != nil {
			if err := v.MergeConfigMap(m); err != nil {
				errs = append(errs, fmt.Errorf("config: %s: %w", path, err))
			}
		}
	}

	for _, k := range knownKeys() {
		name := EnvName(k.name)
		val := getenv(name)
		if legacy, ok := LegacyEnv[k.name]; ok && val == "" {
			name, val = legacy, getenv(legacy)
		}
		if val == "" {
			continue
		}
		x, err := k.decodeString(val)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %s (from %s): %w", k.name, name, err))
			continue
		}
		v.Set(k.name, x)
	}

	if flags != nil {
		flags.Visit(func(f *pflag.Flag) {
			k, ok := flagKey(f.Name)
			if !ok {
				return
			}
			var x any
			var err error
			if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
				x, err = k.decode(sv.GetSlice())
			} else {
				x, err = k.decodeString(f.Value.String())
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("config: %s (from --%s): %w", k.name, f.Name, err))
				return
			}
			v.Set(k.name, x)
		})
	}

	var c Config
	if err := v.UnmarshalExact(&c, viper.DecodeHook(decodeHook())); err != nil {
		for _, e := range flattenDecodeErrors(err) {
			errs = append(errs, fmt.Errorf("config: %s: %w", path, e))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	nilEmptySlices(reflect.ValueOf(&c).Elem())
	c.applyDefaults()
	return &c, nil
}

// nilEmptySlices sets every empty list in v to nil, so that "key: []" in a
// file and no key at all load the same Config.
func nilEmptySlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			nilEmptySlices(v.Field(i))
		}
	case reflect.Slice:
		if v.Len() == 0 && !v.IsNil() {
			v.Set(reflect.Zero(v.Type()))
		}
	}
}

// readFile parses the YAML file at path into the map viper takes, after
// checking every key against Config and normalising worker.command and
// worker.env (whose map form must keep the case of its names, which viper
// would fold).
func readFile(path string) (map[string]any, []error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []error{fmt.Errorf("config: read config file: %w", err)}
	}
	var m map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return nil, []error{fmt.Errorf("config: %s: %w (the file must be a YAML mapping of sections, see deploy/localhost.yaml)", path, err)}
	}
	var errs []error
	for section, sv := range m {
		sec, ok := sections()[strings.ToLower(section)]
		if !ok {
			errs = append(errs, unknownKeyError(path, section))
			delete(m, section) // reported here, not again by UnmarshalExact
			continue
		}
		if sv == nil {
			continue
		}
		sm, ok := sv.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("config: %s: %s must be a mapping of its keys, not %s", path, section, yamlKind(sv)))
			delete(m, section)
			continue
		}
		for key, val := range sm {
			k, ok := sec[strings.ToLower(key)]
			if !ok {
				errs = append(errs, unknownKeyError(path, section+"."+key))
				delete(sm, key)
				continue
			}
			if val == nil {
				delete(sm, key)
				continue
			}
			x, err := k.normalizeFileValue(val)
			if err != nil {
				errs = append(errs, fmt.Errorf("config: %s: %s: %w", path, k.name, err))
				continue
			}
			sm[key] = x
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return m, errs
}

// yamlKind names the kind of a parsed YAML value for an error message.
func yamlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "true/false"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return "a number"
	}
}

// unknownKeyError names an unknown key and, when one is close, the known
// key that was probably meant.
func unknownKeyError(path, key string) error {
	if s := suggest(key); s != "" {
		return fmt.Errorf("config: %s: unknown key %q (did you mean %q?)", path, key, s)
	}
	return fmt.Errorf("config: %s: unknown key %q; the keys are listed in docs/configuration.md", path, key)
}

// suggest returns the known key closest to an unknown one: the same key
// name in another section, or a key (or section) within a small edit
// distance.
func suggest(unknown string) string {
	u := strings.ToLower(unknown)
	leaf := u[strings.LastIndex(u, ".")+1:]
	best, bestDist := "", 4
	for _, k := range knownKeys() {
		if k.name[strings.LastIndex(k.name, ".")+1:] == leaf {
			return k.name
		}
		if d := editDistance(u, k.name); d < bestDist {
			best, bestDist = k.name, d
		}
	}
	for s := range sections() {
		if d := editDistance(u, s); d < bestDist {
			best, bestDist = s, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// key is one leaf of Config: its dotted name and Go type.
type key struct {
	name string
	typ  reflect.Type
}

// Keys returns the dotted name of every configuration key, in the order of
// the Config struct.
func Keys() []string {
	var names []string
	for _, k := range knownKeys() {
		names = append(names, k.name)
	}
	return names
}

// EnvName returns the environment variable that sets a key.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

var knownKeys = sync.OnceValue(func() []key {
	var keys []key
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		sf := ct.Field(i)
		section := sf.Tag.Get("mapstructure")
		for j := range sf.Type.NumField() {
			f := sf.Type.Field(j)
			keys = append(keys, key{name: section + "." + f.Tag.Get("mapstructure"), typ: f.Type})
		}
	}
	return keys
})

// sections maps each section to its keys, by leaf name.
var sections = sync.OnceValue(func() map[string]map[string]key {
	m := map[string]map[string]key{}
	for _, k := range knownKeys() {
		s, leaf, _ := strings.Cut(k.name, ".")
		if m[s] == nil {
			m[s] = map[string]key{}
		}
		m[s][leaf] = k
	}
	return m
})

func lookupKey(name string) (key, bool) {
	for _, k := range knownKeys() {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

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
	case shellWordKeys[k.name]:
		if s, ok := val.(string); ok {
			return splitShellWords(s)
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
		words, err := splitShellWords(s)
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

// splitShellWords splits s into words like a POSIX shell without expansion:
// white space separates, single quotes keep everything, double quotes keep
// everything but a backslash before " or \, a bare backslash escapes the
// next character.
func splitShellWords(s string) ([]string, error) {
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
				return ParseByteSize(d)
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

// UnknownEnv returns the names in environ (NAME=value pairs, as from
// os.Environ) that start with MCPGATE_ but set no key: most likely typos,
// which Load would otherwise ignore in silence. MCPGATE_CONFIG and the
// MCPGATE_WORKER_* identity variables a worker receives are not reported.
// The caller decides whether to warn or refuse; values are never returned.
func UnknownEnv(environ []string) []string {
	known := map[string]bool{EnvConfigFile: true}
	for _, k := range knownKeys() {
		known[EnvName(k.name)] = true
	}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || known[name] || isWorkerIdentityEnv(name) {
			continue
		}
		unknown = append(unknown, name)
	}
	sort.Strings(unknown)
	return unknown
}

// isWorkerIdentityEnv reports the variables of the gateway→worker identity
// contract (worker.Environ), which share our prefix.
func isWorkerIdentityEnv(name string) bool {
	switch name {
	case worker.EnvUser, worker.EnvSessionID, worker.EnvReadOnly, worker.EnvToolsets,
		worker.EnvServerName, worker.EnvServerVersion, worker.EnvServerTitle:
		return true
	}
	return false
}
