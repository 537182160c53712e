package k8s

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// haproxyDirectives returns the directives of the section kind ("defaults",
// "backend"…) in an HAProxy configuration, each split into its words,
// comments dropped.
func haproxyDirectives(cfg, kind string) [][]string {
	var out [][]string
	in := false
	for _, line := range strings.Split(cfg, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' { // a section header
			in = f[0] == kind
			continue
		}
		if in {
			out = append(out, f)
		}
	}
	return out
}

// retryOnUnsafe returns the retry-on conditions of cfg under which HAProxy
// would send a request again after a replica may have received it: every
// condition but conn-failure (the connection or its TLS handshake failed,
// nothing was sent). A POST that reached a replica may have committed a
// write before the replica died; sent again, it runs twice, or answers 404
// on another replica for a write that is in the database.
func retryOnUnsafe(cfg string) []string {
	var bad []string
	for _, kind := range []string{"defaults", "backend", "listen"} {
		for _, d := range haproxyDirectives(cfg, kind) {
			if d[0] != "retry-on" {
				continue
			}
			for _, cond := range d[1:] {
				if cond != "conn-failure" && cond != "none" {
					bad = append(bad, kind+": retry-on "+cond)
				}
			}
		}
	}
	return bad
}

// TestHAProxyNeverResendsARequestThatReachedAReplica: the shipped
// haproxy.cfg retries a request on another replica only when its
// connection failed before anything was sent.
func TestHAProxyNeverResendsARequestThatReachedAReplica(t *testing.T) {
	cfg, err := os.ReadFile("../haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if bad := retryOnUnsafe(string(cfg)); len(bad) > 0 {
		t.Errorf("haproxy.cfg may send a POST again after a replica received it: %v; use retry-on conn-failure only", bad)
	}
	found := false
	for _, d := range haproxyDirectives(string(cfg), "defaults") {
		if d[0] == "retry-on" {
			found = true
		}
	}
	if !found {
		t.Error("haproxy.cfg sets no retry-on in defaults: a connection failure would not be retried on another replica")
	}
}

// TestRetryOnUnsafeCanFail: the check refuses each condition that may
// resend a received request, including the configuration shipped before.
func TestRetryOnUnsafeCanFail(t *testing.T) {
	for _, cond := range []string{"empty-response", "junk-response", "response-timeout", "0rtt-rejected", "503", "all-retryable-errors"} {
		cfg := "defaults\n    mode http\n    retry-on conn-failure " + cond + "\n"
		if bad := retryOnUnsafe(cfg); len(bad) != 1 {
			t.Errorf("retry-on conn-failure %s: got %v, want one refusal", cond, bad)
		}
	}
	old := "defaults\n    retries 3\n    retry-on conn-failure empty-response 503\n    option redispatch 1\nbackend mcpgate\n    balance roundrobin\n"
	if bad := retryOnUnsafe(old); len(bad) != 2 {
		t.Errorf("the former configuration: got %v, want empty-response and 503 refused", bad)
	}
	if bad := retryOnUnsafe("defaults\n    retry-on conn-failure\n"); len(bad) != 0 {
		t.Errorf("conn-failure alone: got %v, want none", bad)
	}
}

// TestHAProxyDetectionTime: the health check's detection time (inter ×
// fall) is the gateway's documented default limits.drain_min, so that a
// draining replica leaves the rotation before it stops serving.
func TestHAProxyDetectionTime(t *testing.T) {
	cfg, err := os.ReadFile("../haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var inter, fall int
	for _, d := range haproxyDirectives(string(cfg), "backend") {
		if d[0] != "default-server" {
			continue
		}
		for i := 1; i+1 < len(d); i++ {
			switch d[i] {
			case "inter":
				inter, _ = strconv.Atoi(strings.TrimSuffix(d[i+1], "s"))
			case "fall":
				fall, _ = strconv.Atoi(d[i+1])
			}
		}
	}
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?m)^\\| `drain_min` \\| `(\\d+)s` \\|").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/configuration.md has no limits.drain_min row with a default in seconds")
	}
	min, _ := strconv.Atoi(string(m[1]))
	if inter == 0 || fall == 0 || inter*fall != min {
		t.Errorf("haproxy.cfg detects a failed /readyz after inter %ds × fall %d = %ds; the default limits.drain_min is %ds: keep them equal",
			inter, fall, inter*fall, min)
	}
}
