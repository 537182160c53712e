package k8s

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// secretKeys reads the `kubectl create secret` commands of a document
// (backslash continuations joined) and returns the keys each Secret gets:
// tls.crt and tls.key for `create secret tls`; a --from-file's key (its
// name=, else the file's base name) or a --from-literal's name.
func secretKeys(doc string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.ReplaceAll(doc, "\\\n", " "), "\n") {
		f := strings.Fields(line)
		for i := 0; i+3 < len(f); i++ {
			if f[i] != "create" || f[i+1] != "secret" {
				continue
			}
			name, keys := f[i+3], map[string]bool{}
			if f[i+2] == "tls" {
				keys["tls.crt"], keys["tls.key"] = true, true
			}
			for _, a := range f[i+4:] {
				if a == "#" {
					break
				}
				if v, ok := strings.CutPrefix(a, "--from-file="); ok {
					if k, _, ok := strings.Cut(v, "="); ok {
						keys[k] = true
					} else {
						keys[path.Base(v)] = true
					}
				}
				if v, ok := strings.CutPrefix(a, "--from-literal="); ok {
					k, _, _ := strings.Cut(v, "=")
					keys[k] = true
				}
			}
			out[name] = keys
		}
	}
	return out
}

// TestDocumentedSecretsHoldWhatIsMounted: every Secret key a manifest of
// the overlay mounts or reads is one the commands in docs/deploy.md write
// (`kubectl create secret tls` writes no ca.crt, which HAProxy's
// replica-tls volume mounts).
func TestDocumentedSecretsHoldWhatIsMounted(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	checkSecretKeys(t, secretKeys(string(doc)))
}

// TestSecretKeysCanFail: the documented command before holds no ca.crt.
func TestSecretKeysCanFail(t *testing.T) {
	keys := secretKeys("kubectl -n mcpgate create secret tls mcpgate-tls --cert=tls.crt --key=tls.key   # with ca.crt: cert-manager's form\n")
	if keys["mcpgate-tls"]["ca.crt"] || !keys["mcpgate-tls"]["tls.key"] {
		t.Errorf("got %v, want tls.crt and tls.key only", keys)
	}
	keys = secretKeys("kubectl create secret generic x --type=kubernetes.io/tls \\\n  --from-file=tls.crt --from-file=ca.crt=/tmp/ca.pem --from-literal=dsn='a=b'\n")
	for _, k := range []string{"tls.crt", "ca.crt", "dsn"} {
		if !keys["x"][k] {
			t.Errorf("got %v, want %s", keys["x"], k)
		}
	}
}

func checkSecretKeys(t *testing.T, documented map[string]map[string]bool) {
	t.Helper()
	objs := &objects{configMaps: map[string]bool{}}
	walk(t, "overlays/haproxy", objs)
	need := func(secret, key, what string) {
		keys, ok := documented[secret]
		switch {
		case !ok:
			t.Errorf("%s uses Secret %s, which docs/deploy.md does not create", what, secret)
		case key != "" && !keys[key]:
			t.Errorf("%s uses key %s of Secret %s, which docs/deploy.md's command does not write (it writes %v)", what, key, secret, keys)
		}
	}
	for _, o := range objs.list {
		var pod *corev1.PodSpec
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			pod = &w.Spec.Template.Spec
		case *appsv1.Deployment:
			pod = &w.Spec.Template.Spec
		default:
			continue
		}
		for _, v := range pod.Volumes {
			if v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				need(v.Secret.SecretName, "", "volume "+v.Name)
			}
			for _, it := range v.Secret.Items {
				need(v.Secret.SecretName, it.Key, "volume "+v.Name)
			}
		}
		for _, c := range pod.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					need(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key, "env "+e.Name)
				}
			}
		}
	}
}

// TestProbesMatchOperationsDoc: the probes and grace period docs/operations.md
// shows for Kubernetes are the StatefulSet's.
func TestProbesMatchOperationsDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\\*\\*Kubernetes:?\\*\\*[^\n]*\n\n```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/operations.md has no yaml block after **Kubernetes**")
	}
	var documented struct {
		ReadinessProbe                *corev1.Probe `json:"readinessProbe"`
		LivenessProbe                 *corev1.Probe `json:"livenessProbe"`
		StartupProbe                  *corev1.Probe `json:"startupProbe"`
		TerminationGracePeriodSeconds *int64        `json:"terminationGracePeriodSeconds"`
	}
	if err := yaml.UnmarshalStrict(m[1], &documented); err != nil {
		t.Fatalf("docs/operations.md's Kubernetes block: %v", err)
	}
	objs := &objects{configMaps: map[string]bool{}}
	walk(t, "base", objs)
	var sts *appsv1.StatefulSet
	for _, o := range objs.list {
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet in the base")
	}
	c := sts.Spec.Template.Spec.Containers[0]
	for _, p := range []struct {
		name          string
		doc, manifest *corev1.Probe
	}{
		{"readinessProbe", documented.ReadinessProbe, c.ReadinessProbe},
		{"livenessProbe", documented.LivenessProbe, c.LivenessProbe},
		{"startupProbe", documented.StartupProbe, c.StartupProbe},
	} {
		if (p.doc == nil) != (p.manifest == nil) {
			t.Errorf("%s: documented %v, manifest %v", p.name, p.doc != nil, p.manifest != nil)
			continue
		}
		if p.doc == nil {
			continue
		}
		if p.doc.HTTPGet == nil || p.manifest.HTTPGet == nil || p.doc.HTTPGet.Path != p.manifest.HTTPGet.Path || p.doc.HTTPGet.Scheme != p.manifest.HTTPGet.Scheme {
			t.Errorf("%s: documented %+v, manifest %+v", p.name, p.doc.HTTPGet, p.manifest.HTTPGet)
		}
		if p.doc.PeriodSeconds != p.manifest.PeriodSeconds || p.doc.FailureThreshold != p.manifest.FailureThreshold {
			t.Errorf("%s: documented periodSeconds %d failureThreshold %d, manifest %d and %d",
				p.name, p.doc.PeriodSeconds, p.doc.FailureThreshold, p.manifest.PeriodSeconds, p.manifest.FailureThreshold)
		}
	}
	g, want := sts.Spec.Template.Spec.TerminationGracePeriodSeconds, documented.TerminationGracePeriodSeconds
	if g == nil || want == nil || *g != *want {
		t.Errorf("terminationGracePeriodSeconds: documented %v, manifest %v", want, g)
	}
}
