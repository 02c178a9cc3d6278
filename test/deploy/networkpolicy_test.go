package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNetworkPoliciesAdmitOnlyTheAPIServerOnTheWebhookPort checks the
// structure of config/network-policy with [WEBHOOK], [NETWORK POLICY] and
// [WEBHOOK NETWORK POLICY] enabled. envtest runs no network plugin, so no
// packet is ever filtered there: what can be tested is what the policies
// say. Every policy selects the manager's pods; each rule names its ports
// and its sources (a rule without them admits everything); the webhook port
// the Service targets is admitted from an IP block only (the API server is
// not a pod, so no selector could match it) and from nothing else; the
// metrics port from namespaces labelled metrics: enabled only. The
// placeholder for the API server's addresses is refused by the API server
// until it is replaced, so the policy cannot be applied half done.
func TestNetworkPoliciesAdmitOnlyTheAPIServerOnTheWebhookPort(t *testing.T) {
	g := NewWithT(t)
	dir := enableParts(t, "WEBHOOK", "NETWORK POLICY", "WEBHOOK NETWORK POLICY")
	docs := decode(t, kustomize(t, filepath.Join(dir, "default"), "build"))

	var dep struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, docs, "Deployment", "gopf-controller-manager").Object, &dep)).To(Succeed())
	podLabels := labels.Set(dep.Spec.Template.Labels)
	var svc corev1.Service
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, docs, "Service", "gopf-webhook-service").Object, &svc)).To(Succeed())
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	webhookPort := svc.Spec.Ports[0].TargetPort

	admitted := map[string][]networkingv1.NetworkPolicyPeer{} // by port
	policies := 0
	for _, d := range docs {
		if d.GetKind() != "NetworkPolicy" {
			continue
		}
		policies++
		var np networkingv1.NetworkPolicy
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &np)).To(Succeed())
		selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(selector.Matches(podLabels)).To(BeTrue(), "%s selects the manager's pods", np.Name)
		g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}), np.Name)
		for _, rule := range np.Spec.Ingress {
			g.Expect(rule.Ports).NotTo(BeEmpty(), "%s: a rule without ports admits every port", np.Name)
			g.Expect(rule.From).NotTo(BeEmpty(), "%s: a rule without sources admits everyone", np.Name)
			for _, p := range rule.Ports {
				admitted[p.Port.String()] = append(admitted[p.Port.String()], rule.From...)
			}
		}
	}
	g.Expect(policies).To(Equal(2))
	g.Expect(admitted).To(HaveLen(2), "only the metrics and webhook ports are admitted")
	g.Expect(admitted[webhookPort.String()]).To(ConsistOf(And(
		HaveField("IPBlock.CIDR", "API-SERVER-CIDR"),
		HaveField("PodSelector", BeNil()),
		HaveField("NamespaceSelector", BeNil()),
	)), "the webhook port: the API server's addresses, nothing else")
	g.Expect(admitted["8443"]).To(ConsistOf(And(
		HaveField("IPBlock", BeNil()),
		HaveField("NamespaceSelector.MatchLabels", Equal(map[string]string{"metrics": "enabled"})),
	)))

	c, _ := clientWithWarnings(t)
	createNamespace(t, c, docs)
	apply := func(d *unstructured.Unstructured) error {
		return c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(d.DeepCopy()),
			client.FieldOwner("gopf-deploy-test"), client.ForceOwnership, client.DryRunAll)
	}
	webhookPolicy := find(t, docs, "NetworkPolicy", "gopf-allow-webhook-traffic")
	g.Expect(apply(webhookPolicy)).To(MatchError(ContainSubstring("API-SERVER-CIDR")), "the placeholder is refused")

	// Replaced as the file says, the policy is accepted.
	path := filepath.Join(dir, "network-policy", "webhook", "allow-webhook-traffic.yaml")
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(path, []byte(strings.ReplaceAll(string(data), "cidr: API-SERVER-CIDR", "cidr: 192.0.2.10/32")), 0o644)).To(Succeed())
	docs = decode(t, kustomize(t, filepath.Join(dir, "default"), "build"))
	g.Expect(apply(find(t, docs, "NetworkPolicy", "gopf-allow-webhook-traffic"))).To(Succeed())
}
