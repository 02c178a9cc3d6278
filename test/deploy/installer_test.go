package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testImage is the image the installer is built with.
const testImage = "registry.example.com/gopf/minimal:v0.1.0"

// namespace is where config/default puts the operator.
const namespace = "gopf-system"

// The installer is built once and shared by the tests that need it.
var (
	installerOnce sync.Once
	installerDocs []*unstructured.Unstructured
)

func installer(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	installerOnce.Do(func() { installerDocs = decode(t, buildInstaller(t, testImage)) })
	if installerDocs == nil {
		t.Fatal("building the installer failed in an earlier test")
	}
	return installerDocs
}

// find returns the object of that kind and name, or fails the test.
func find(t *testing.T, docs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, d := range docs {
		if d.GetKind() == kind && d.GetName() == name {
			return d
		}
	}
	t.Fatalf("the installer has no %s %s", kind, name)
	return nil
}

func TestTheInstallerRunsTheImageWithTheManagersFlagsAndProbes(t *testing.T) {
	g := NewWithT(t)
	docs := installer(t)
	for _, d := range docs {
		if d.GetKind() != "Namespace" && d.GetKind() != "CustomResourceDefinition" && d.GetKind() != "ClusterRole" && d.GetKind() != "ClusterRoleBinding" {
			g.Expect(d.GetNamespace()).To(Equal(namespace), "%s %s", d.GetKind(), d.GetName())
		}
	}
	find(t, docs, "Namespace", namespace)
	find(t, docs, "CustomResourceDefinition", "kopfexamples.kopf.dev")
	find(t, docs, "ServiceAccount", "gopf-controller-manager")
	find(t, docs, "Service", "gopf-controller-manager-metrics-service")

	var dep struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	u := find(t, docs, "Deployment", "gopf-controller-manager")
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dep)).To(Succeed())
	pod := dep.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("gopf-controller-manager"))
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal(testImage))
	g.Expect(c.Command).To(Equal([]string{"/manager"}), "the Dockerfile's ENTRYPOINT")
	g.Expect(c.Args).To(ConsistOf("--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443"))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.LivenessProbe.HTTPGet.Port.String()).To(Equal("health"))
	g.Expect(c.Ports).To(ContainElements(
		HaveField("ContainerPort", int32(8081)),
		HaveField("ContainerPort", int32(8443)),
	))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(c.Resources.Limits).NotTo(BeEmpty())
}

// warnings collects the warnings the API server sends.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// clientWithWarnings returns a client of the control plane that records
// the warnings of its responses.
func clientWithWarnings(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(controlPlane(t).Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// createNamespace creates the installer's Namespace for real: namespaced
// objects cannot even be dry-run without it.
func createNamespace(t *testing.T, c client.Client, docs []*unstructured.Unstructured) {
	t.Helper()
	ns := find(t, docs, "Namespace", namespace).DeepCopy()
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
}

// dryRunApply is `kubectl apply --server-side --dry-run=server` of docs,
// but for the Namespace, which createNamespace makes for real, and the
// objects that skip (if given) leaves out: every object must pass
// validation and admission without a warning.
func dryRunApply(t *testing.T, docs []*unstructured.Unstructured, skip func(*unstructured.Unstructured) bool) {
	t.Helper()
	g := NewWithT(t)
	c, warned := clientWithWarnings(t)
	createNamespace(t, c, docs)
	for _, d := range docs {
		if d.GetKind() == "Namespace" || skip != nil && skip(d) {
			continue
		}
		err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(d.DeepCopy()),
			client.FieldOwner("gopf-deploy-test"), client.ForceOwnership, client.DryRunAll)
		g.Expect(err).NotTo(HaveOccurred(), "%s %s", d.GetKind(), d.GetName())
	}
	g.Expect(warned.all()).To(BeEmpty())
}

// TestTheInstallerIsAcceptedByTheAPIServer is `kubectl apply
// --server-side --dry-run=server -f dist/install.yaml`: every object passes
// validation and admission. The Namespace enforces Pod Security
// "restricted", which warns about a Deployment whose pods it would refuse.
func TestTheInstallerIsAcceptedByTheAPIServer(t *testing.T) {
	dryRunApply(t, installer(t), nil)
}

// enableParts returns a copy of config/ in which config/default's optional
// parts with the given markers ("WEBHOOK", "CERTMANAGER", ...) are
// uncommented, as a user would.
func enableParts(t *testing.T, parts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "config"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "default", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	enabled := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "# ["):
			marker := strings.TrimPrefix(line[:strings.Index(line, "]")], "# [")
			enabled = slices.Contains(parts, marker)
		case !strings.HasPrefix(line, "#"):
			enabled = false
		case enabled && (strings.HasPrefix(line, "#- ") || strings.HasPrefix(line, "#  ")):
			line = line[1:]
		}
		out = append(out, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTheOptionalWebhookPartsFitTogether enables the commented-out
// [WEBHOOK], [CERTMANAGER], [PROMETHEUS] and [NETWORK POLICY] parts of
// config/default: the manager's flags name the webhook Service the build
// holds, its port is the one the Service targets, the mounted Secret is the
// one cert-manager writes for a certificate of the Service's name, and the
// API server accepts every object of a kind it serves.
func TestTheOptionalWebhookPartsFitTogether(t *testing.T) {
	g := NewWithT(t)
	dir := enableParts(t, "WEBHOOK", "CERTMANAGER", "PROMETHEUS", "NETWORK POLICY")
	docs := decode(t, kustomize(t, filepath.Join(dir, "default"), "build"))

	svc := find(t, docs, "Service", "gopf-webhook-service")
	targetPort, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	g.Expect(targetPort).To(ConsistOf(HaveKeyWithValue("targetPort", BeNumerically("==", 9443))))
	cert := find(t, docs, "Certificate", "gopf-serving-cert")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	g.Expect(dnsNames).To(ContainElement("gopf-webhook-service." + namespace + ".svc"))
	find(t, docs, "ServiceMonitor", "gopf-controller-manager-metrics-monitor")
	find(t, docs, "NetworkPolicy", "gopf-allow-metrics-traffic")

	var dep struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, docs, "Deployment", "gopf-controller-manager").Object, &dep)).To(Succeed())
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	g.Expect(c.Args).To(ContainElements(
		"--webhook-bind-address=:9443",
		"--webhook-service="+namespace+"/gopf-webhook-service",
		"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs",
		"--webhook-cert-files",
	))
	g.Expect(c.Ports).To(ContainElement(HaveField("ContainerPort", int32(9443))))
	g.Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp/k8s-webhook-server/serving-certs")))
	g.Expect(pod.Volumes).To(ContainElement(HaveField("Secret.SecretName", secretName)))

	dryRunApply(t, docs, func(d *unstructured.Unstructured) bool {
		switch d.GroupVersionKind().Group {
		case "cert-manager.io", "monitoring.coreos.com":
			return true // not served by a bare API server
		}
		return false
	})
}

// TestTheShardingPartTurnsLeaderElectionIntoARing enables the
// commented-out [SHARDING] part of config/default: several replicas, each
// a shard of one ring instead of a leader or a standby, told their
// namespace for the Leases, with a PodDisruptionBudget that takes one at a
// time; the API server accepts both.
func TestTheShardingPartTurnsLeaderElectionIntoARing(t *testing.T) {
	g := NewWithT(t)
	dir := enableParts(t, "SHARDING")
	docs := decode(t, kustomize(t, filepath.Join(dir, "default"), "build"))
	var dep appsv1.Deployment
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, docs, "Deployment", "gopf-controller-manager").Object, &dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(BeNumerically(">", 1))
	c := dep.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).To(ContainElement("--shard-ring=gopf"))
	g.Expect(c.Args).NotTo(ContainElement("--leader-elect"), "shards and leader election exclude each other")
	g.Expect(c.Env).To(ContainElement(HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace")))
	pdb := find(t, docs, "PodDisruptionBudget", "gopf-controller-manager")
	maxUnavailable, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable")
	g.Expect(maxUnavailable).To(BeNumerically("==", 1))

	dryRunApply(t, docs, nil)
}
