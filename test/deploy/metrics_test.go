package deploy_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// serviceAccountToken creates ServiceAccount name in the installer's
// namespace, bound to clusterRole unless that is "", and returns a token of
// it.
func serviceAccountToken(t *testing.T, c client.Client, name, clusterRole string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatalf("creating ServiceAccount %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), sa) })
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: name}},
		}
		if err := c.Create(ctx, binding); err != nil {
			t.Fatalf("binding %s to %s: %v", name, clusterRole, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), binding) })
	}
	req := &authenticationv1.TokenRequest{}
	if err := c.SubResource("token").Create(ctx, sa, req); err != nil {
		t.Fatalf("requesting a token of %s: %v", name, err)
	}
	return req.Status.Token
}

// asOperator is cfg acting as the installer's ServiceAccount: what the
// operator may do in a cluster, not what a test's administrator may.
func asOperator(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":gopf-controller-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return cfg
}

// scrape gets url with a bearer token ("" for none), skipping the
// verification of the self-signed certificate as the ServiceMonitor does.
func scrape(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestMetricsAreServedOnlyToCallersBoundToMetricsReader runs an operator as
// the installer's ServiceAccount, with the installer's RBAC, and metrics
// served as gopf.Main serves them by default: a scrape without a token is
// refused, so is one by a ServiceAccount without the metrics-reader role,
// and one by a ServiceAccount bound to it gets the metrics and the probe
// results. The operator checks the tokens with its own identity, so
// config/rbac's metrics-auth-role is what makes that work.
func TestMetricsAreServedOnlyToCallersBoundToMetricsReader(t *testing.T) {
	g := NewWithT(t)
	cp := controlPlane(t)
	c, _ := clientWithWarnings(t)
	applyRBAC(t, c, installer(t))
	reader := serviceAccountToken(t, c, "metrics-scraper", "gopf-metrics-reader")
	stranger := serviceAccountToken(t, c, "metrics-stranger", "")

	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(kopfv1.AddToScheme(scheme)).To(Succeed())
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) { return nil, nil })
	handlers.OnProbe(reg, func(context.Context, *handlers.Cause) (any, error) { return "fine", nil }, handlers.ID("health"))
	addr := freePort(t)
	op, err := envtest.RunOperator(context.Background(), asOperator(cp.Config), reg, envtest.OperatorOptions{
		Scheme: scheme, MetricsBindAddress: addr, SecureMetrics: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })

	metrics, probes := "https://"+addr+"/metrics", "https://"+addr+"/probes"
	g.Eventually(func() (int, error) { code, _, err := scrape(metrics, ""); return code, err }, 30*time.Second).
		Should(Equal(http.StatusUnauthorized), "no token")
	code, body, err := scrape(metrics, stranger)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden), "a ServiceAccount without metrics-reader: %s", body)
	code, body, err = scrape(metrics, "not-a-token")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusUnauthorized), "a token the API server does not know: %s", body)
	code, _, err = scrape(probes, stranger)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden), "the probe results are behind the same check")

	code, body, err = scrape(metrics, reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
	code, body, err = scrape(probes, reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"health"`))

	_, err = (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred(), "a plain HTTP request gets the TLS server's 400 answer")
}

// TestPlainHTTPMetricsNeedNoToken is --metrics-secure=false: the metrics
// are served over plain HTTP to anyone.
func TestPlainHTTPMetricsNeedNoToken(t *testing.T) {
	g := NewWithT(t)
	addr := freePort(t)
	op, err := envtest.RunOperator(context.Background(), controlPlane(t).Config, handlers.NewRegistry(), envtest.OperatorOptions{MetricsBindAddress: addr})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })
	g.Eventually(func() (int, error) { return status("http://" + addr + "/metrics") }, 30*time.Second).Should(Equal(http.StatusOK))
}
