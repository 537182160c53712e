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

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

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
		if k.name == "servers" {
			errs = append(errs, fmt.Errorf("config: servers (from %s): a list of servers is set in the file only; remove the variable", name))
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

	c := *preset()
	if err := v.UnmarshalExact(&c, viper.DecodeHook(decodeHook())); err != nil {
		// Environment and flag values were decoded on their own above, so
		// what fails here came from the file.
		for _, e := range flattenDecodeErrors(err) {
			if path == "" {
				errs = append(errs, fmt.Errorf("config: %w", e))
			} else {
				errs = append(errs, fmt.Errorf("config: %s: %w", path, e))
			}
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
		if _, isList := sec[""]; isList { // servers: a list of its own
			errs = append(errs, normalizeServers(path, sv)...)
			continue
		}
		sm, ok := sv.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("config: %s: %s must be a mapping of its keys, not %s", path, section, yamlKind(sv)))
			delete(m, section)
			continue
		}
		errs = append(errs, normalizeKeys(path, section, "", sec, sm)...)
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return m, errs
}

// normalizeKeys checks and normalises the keys of one section's mapping sm
// (or of a group within it, such as worker.limits, under prefix), dropping
// the unknown and null ones from sm.
func normalizeKeys(path, section, prefix string, sec map[string]key, sm map[string]any) []error {
	return normalizeMapping(path, section, prefix, sec, sm, func(leaf string) error {
		return unknownKeyError(path, section+"."+leaf)
	})
}

// normalizeMapping is normalizeKeys for the mapping at (a section, or a
// servers entry), with unknown saying what is wrong with an unknown key.
func normalizeMapping(path, at, prefix string, sec map[string]key, sm map[string]any, unknown func(leaf string) error) []error {
	var errs []error
	for name, val := range sm {
		leaf := prefix + strings.ToLower(name)
		k, ok := sec[leaf]
		if !ok && isGroup(sec, leaf) {
			gm, isMap := val.(map[string]any)
			if !isMap {
				if val != nil {
					errs = append(errs, fmt.Errorf("config: %s: %s.%s must be a mapping of its keys, not %s", path, at, leaf, yamlKind(val)))
				}
				delete(sm, name)
				continue
			}
			errs = append(errs, normalizeMapping(path, at, leaf+".", sec, gm, unknown)...)
			continue
		}
		if !ok {
			errs = append(errs, unknown(leaf))
			delete(sm, name)
			continue
		}
		if val == nil {
			delete(sm, name)
			continue
		}
		x, err := k.normalizeFileValue(val)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %s: %s.%s: %w", path, at, leaf, err))
			continue
		}
		sm[name] = x
	}
	return errs
}

// isGroup reports whether leaf names a group of keys in sec (limits in
// worker: worker.limits.memory and the rest).
func isGroup(sec map[string]key, leaf string) bool {
	for k := range sec {
		if strings.HasPrefix(k, leaf+".") {
			return true
		}
	}
	return false
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
