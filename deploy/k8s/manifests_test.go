package k8s

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization these manifests
// use; decoding it strictly refuses any other field, so a field this test
// does not follow cannot slip in.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels,omitempty"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"configMapGenerator,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
	// Patches are strategic-merge patches: partial objects, decoded
	// strictly as their API types (a misspelt field fails as in a
	// resource) but not counted among the objects.
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
}

// typeOf returns a new value of the API type of kind.
func typeOf(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Namespace":
		return &corev1.Namespace{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("no API type for %s %s in this test: add it", apiVersion, kind)
}

// decodeStrict decodes one YAML document into its API type, refusing
// unknown and duplicate fields.
func decodeStrict(doc []byte) (any, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	obj, err := typeOf(head.APIVersion, head.Kind)
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", head.Kind, err)
	}
	return obj, nil
}

// objects is every object a kustomization lists, its bases' too.
type objects struct {
	list       []any
	configMaps map[string]bool // generated ConfigMap names
}

// walk decodes dir's kustomization and every resource it lists, strictly.
func walk(t *testing.T, dir string, into *objects) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s/kustomization.yaml: got %s %s, want kustomize.config.k8s.io/v1beta1 Kustomization", dir, k.APIVersion, k.Kind)
	}
	for _, g := range k.ConfigMapGenerator {
		into.configMaps[g.Name] = true
		for _, f := range g.Files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: configMapGenerator %s: %v", dir, g.Name, err)
			}
		}
	}
	for _, pt := range k.Patches {
		b, err := os.ReadFile(filepath.Join(dir, pt.Path))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeStrict(b); err != nil {
			t.Errorf("%s/%s: %v", dir, pt.Path, err)
		}
	}
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			walk(t, p, into)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			into.list = append(into.list, obj)
		}
	}
}

// TestManifestsDecodeStrictly: every manifest of the base and the overlay
// is its API type with no unknown field; what docs/deploy.md promises is there.
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, dir := range []string{"base", "overlays/haproxy"} {
		t.Run(dir, func(t *testing.T) {
			objs := &objects{configMaps: map[string]bool{}}
			walk(t, dir, objs)
			checkBase(t, objs)
		})
	}
}

func checkBase(t *testing.T, objs *objects) {
	t.Helper()
	var sts *appsv1.StatefulSet
	kinds := map[string]int{}
	for _, o := range objs.list {
		kinds[fmt.Sprintf("%T", o)]++
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	for _, want := range []string{"*v1.StatefulSet", "*v1.Service", "*v1.PodDisruptionBudget", "*v2.HorizontalPodAutoscaler", "*v1.NetworkPolicy"} {
		if kinds[want] == 0 {
			t.Errorf("no %s among %v", want, kinds)
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet")
	}
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("the readiness probe is not GET /readyz")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("the liveness probe is not GET /healthz")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("resource requests or limits missing")
	}
	sc := c.SecurityContext
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("not non-root with a read-only root filesystem and no privilege escalation")
	}
	// limits.drain_timeout (30s) + limits.worker_stop_grace (5s).
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g <= 35 {
		t.Errorf("terminationGracePeriodSeconds %v is not above the drain timeout plus the stop grace (35s)", g)
	}
	replicaID := false
	for _, e := range c.Env {
		if e.Name == "MCPGATE_SERVER_REPLICA_ID" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			replicaID = true
		}
		if e.Name == "MCPGATE_DATABASE_DSN" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Error("the database DSN does not come from a Secret")
		}
	}
	if !replicaID {
		t.Error("MCPGATE_SERVER_REPLICA_ID is not the pod name")
	}
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && !objs.configMaps[v.ConfigMap.Name] {
			t.Errorf("volume %s names ConfigMap %s, which no configMapGenerator makes", v.Name, v.ConfigMap.Name)
		}
	}
}

// TestOverlayRunsTheShippedHAProxyConfig: the overlay's haproxy.cfg is
// deploy/haproxy/haproxy.cfg (kustomize reads no file outside the
// overlay), and the HAProxy Deployment sets every variable it reads, with
// one replica address per server line.
func TestOverlayRunsTheShippedHAProxyConfig(t *testing.T) {
	shipped, err := os.ReadFile("../haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	copy, err := os.ReadFile("overlays/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, copy) {
		t.Fatal("deploy/k8s/overlays/haproxy/haproxy.cfg differs from deploy/haproxy/haproxy.cfg: cp deploy/haproxy/haproxy.cfg deploy/k8s/overlays/haproxy/")
	}
	objs := &objects{configMaps: map[string]bool{}}
	walk(t, "overlays/haproxy", objs)
	var lb *appsv1.Deployment
	for _, o := range objs.list {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == "mcpgate-haproxy" {
			lb = d
		}
	}
	if lb == nil {
		t.Fatal("no mcpgate-haproxy Deployment in the overlay")
	}
	env := map[string]string{}
	for _, e := range lb.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	for _, line := range strings.Split(string(shipped), "\n") {
		for rest := line; strings.Contains(rest, "${"); {
			i := strings.Index(rest, "${")
			j := strings.Index(rest[i:], "}")
			name := rest[i+2 : i+j]
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				break
			}
			if env[name] == "" {
				t.Errorf("haproxy.cfg reads %s, which the overlay's Deployment does not set", name)
			}
			rest = rest[i+j:]
		}
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "server" {
			n := strings.TrimPrefix(f[1], "mcpgate-")
			if !strings.HasPrefix(env["MCPGATE_REPLICA_"+n], f[1]+".") {
				t.Errorf("server %s's address %q is not the StatefulSet pod %s", f[1], env["MCPGATE_REPLICA_"+n], f[1])
			}
		}
	}
}

// TestKustomizeBuild renders the overlay with kubectl kustomize, when
// kubectl is installed, and decodes every rendered object strictly.
func TestKustomizeBuild(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed; the manifests were decoded file by file")
	}
	out, err := exec.Command("kubectl", "kustomize", "overlays/haproxy").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	n := 0
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		if _, err := decodeStrict(doc); err != nil {
			t.Error(err)
		}
		n++
	}
	if n < 10 {
		t.Errorf("rendered %d objects, want the base's and the overlay's", n)
	}
}

// TestDecodeStrictRefusesUnknownFields: the check can fail: a misspelt
// field, one at the wrong level and a duplicate key are errors.
func TestDecodeStrictRefusesUnknownFields(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt":     "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  selectr: {a: b}\n",
		"wrong level":  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  readOnlyRootFilesystem: true\n",
		"duplicate":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n  clusterIP: None\n",
		"unknown kind": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
	} {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}
