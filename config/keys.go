package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/workerproto"
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
		switch {
		case !sf.IsExported():
		case sf.Type.Kind() != reflect.Struct: // servers: a key of its own, a list
			keys = append(keys, key{name: sf.Tag.Get("mapstructure"), typ: sf.Type})
		default:
			keys = appendKeys(keys, sf.Tag.Get("mapstructure"), sf.Type)
		}
	}
	return keys
})

// appendKeys appends the keys of section type t under prefix; a field that
// is itself a struct is a group of keys one level down (worker.limits.*).
func appendKeys(keys []key, prefix string, t reflect.Type) []key {
	for j := range t.NumField() {
		f := t.Field(j)
		name := prefix + "." + f.Tag.Get("mapstructure")
		if f.Type.Kind() == reflect.Struct {
			keys = appendKeys(keys, name, f.Type)
			continue
		}
		keys = append(keys, key{name: name, typ: f.Type})
	}
	return keys
}

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
		if !strings.HasPrefix(name, EnvPrefix) || known[name] || workerproto.IsReservedEnv(name) {
			continue
		}
		unknown = append(unknown, name)
	}
	sort.Strings(unknown)
	return unknown
}
