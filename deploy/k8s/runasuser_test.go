package k8s

import (
	"bytes"
	"os/exec"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestRunAsUserOverlay: the overlay for worker.run_as user decodes
// strictly, and once rendered runs the gateway as root holding only
// SETUID, SETGID, CHOWN and KILL, without privilege escalation, a read-only root
// filesystem and no fsGroup over the accounts' claim, with the mapping
// and the data directories on that claim.
func TestRunAsUserOverlay(t *testing.T) {
	objs := &objects{configMaps: map[string]bool{}}
	walk(t, "overlays/run-as-user", objs)
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed; the overlay was decoded file by file")
	}
	out, err := exec.Command("kubectl", "kustomize", "overlays/run-as-user").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	var sts *appsv1.StatefulSet
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := obj.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet rendered")
	}
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 0 || psc.FSGroup != nil {
		t.Errorf("the pod does not run as uid 0 without an fsGroup: %+v", psc)
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SETUID", "SETGID", "CHOWN", "KILL"}) {
		t.Errorf("capabilities are not drop ALL, add SETUID SETGID CHOWN KILL: %+v", sc)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("privilege escalation allowed or the root filesystem writable")
	}
	env := map[string]string{}
	replicaID := false
	for _, e := range c.Env {
		env[e.Name] = e.Value
		replicaID = replicaID || e.Name == "MCPGATE_SERVER_REPLICA_ID"
	}
	if env["MCPGATE_WORKER_RUN_AS"] != "user" || env["MCPGATE_WORKER_UID_MAP_FILE"] != "/var/lib/mcpgate/uids.json" || env["MCPGATE_WORKER_DATA_DIR"] != "/var/lib/mcpgate/users" {
		t.Errorf("worker.run_as user is not configured: %v", env)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == "accounts" && m.MountPath == "/var/lib/mcpgate")
	}
	claimed := false
	for _, v := range pod.Volumes {
		claimed = claimed || (v.Name == "accounts" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "mcpgate-accounts")
	}
	if !mounted || !claimed {
		t.Error("the accounts claim is not mounted at /var/lib/mcpgate")
	}
	if !replicaID {
		t.Error("the base's environment was replaced, not merged")
	}
}
