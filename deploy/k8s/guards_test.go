package k8s

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// TestOverlayGuards: the replicas and the HAProxy pods are spread one per
// node, HAProxy has a PodDisruptionBudget and a preStop that lets the
// Service drop it before it stops listening, and every NetworkPolicy
// bounds egress as well as ingress.
func TestOverlayGuards(t *testing.T) {
	objs := &objects{configMaps: map[string]bool{}}
	walk(t, "overlays/haproxy", objs)
	pods := map[string]*corev1.PodSpec{}
	pdbs := map[string]bool{}
	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, o := range objs.list {
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			pods[w.Name] = &w.Spec.Template.Spec
		case *appsv1.Deployment:
			pods[w.Name] = &w.Spec.Template.Spec
		case *policyv1.PodDisruptionBudget:
			pdbs[w.Spec.Selector.MatchLabels["app.kubernetes.io/name"]] = true
		case *networkingv1.NetworkPolicy:
			policies[w.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"]] = w
		}
	}
	for _, name := range []string{"mcpgate", "mcpgate-haproxy"} {
		pod := pods[name]
		if pod == nil {
			t.Errorf("no workload %s", name)
			continue
		}
		spread := false
		for _, c := range pod.TopologySpreadConstraints {
			if c.TopologyKey == "kubernetes.io/hostname" && c.WhenUnsatisfiable == corev1.DoNotSchedule && c.MaxSkew == 1 &&
				c.LabelSelector != nil && c.LabelSelector.MatchLabels["app.kubernetes.io/name"] == name {
				spread = true
			}
		}
		if !spread {
			t.Errorf("%s is not spread one per node (topologySpreadConstraints on kubernetes.io/hostname)", name)
		}
		if !pdbs[name] {
			t.Errorf("%s has no PodDisruptionBudget", name)
		}
		np := policies[name]
		if np == nil {
			t.Errorf("%s has no NetworkPolicy", name)
			continue
		}
		egress := false
		for _, pt := range np.Spec.PolicyTypes {
			egress = egress || pt == networkingv1.PolicyTypeEgress
		}
		if !egress || len(np.Spec.Egress) == 0 {
			t.Errorf("%s's NetworkPolicy does not bound egress", name)
		}
	}
	if lb := pods["mcpgate-haproxy"]; lb != nil {
		l := lb.Containers[0].Lifecycle
		if l == nil || l.PreStop == nil || l.PreStop.Sleep == nil || l.PreStop.Sleep.Seconds <= 0 {
			t.Error("HAProxy has no preStop sleep: it would stop listening while the Service still sends it connections")
		} else if g := lb.TerminationGracePeriodSeconds; g != nil && *g <= l.PreStop.Sleep.Seconds {
			t.Errorf("HAProxy's terminationGracePeriodSeconds %d does not outlast its preStop sleep %d", *g, l.PreStop.Sleep.Seconds)
		}
	}
}
