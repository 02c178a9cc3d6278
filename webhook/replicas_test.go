package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/webhook"
)

// roundRobin is a TCP balancer, as a Service in front of replicas is: each
// connection goes to the next backend. closeAll ends the open connections,
// so that the API server's next request opens a new one.
type roundRobin struct {
	ln       net.Listener
	mu       sync.Mutex
	backends []string
	next     int
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newRoundRobin(t *testing.T) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr := &roundRobin{ln: ln}
	rr.wg.Add(1)
	go rr.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		rr.closeAll()
		rr.wg.Wait()
	})
	return rr
}

func (rr *roundRobin) serve() {
	defer rr.wg.Done()
	for {
		in, err := rr.ln.Accept()
		if err != nil {
			return
		}
		rr.mu.Lock()
		backend := rr.backends[rr.next%len(rr.backends)]
		rr.next++
		rr.mu.Unlock()
		out, err := net.Dial("tcp", backend)
		if err != nil {
			in.Close()
			continue
		}
		rr.mu.Lock()
		rr.conns = append(rr.conns, in, out)
		rr.mu.Unlock()
		rr.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer rr.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(out, in)
		go pipe(in, out)
	}
}

func (rr *roundRobin) closeAll() {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, c := range rr.conns {
		c.Close()
	}
	rr.conns = nil
}

func (rr *roundRobin) url() string { return "https://" + rr.ln.Addr().String() }

func TestReplicasWithOneCertificateSecretServeInTurnAcrossARotation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	rr := newRoundRobin(t)
	secret := &webhook.SecretRef{Namespace: ns, Name: "webhook-certs"}
	name := testLabel(t) + ".test.gopf.dev"

	var served [2]atomic.Int32
	replica := func(i int) *webhook.Server {
		reg := handlers.NewRegistry()
		handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
			served[i].Add(1)
			return nil
		}, selectTest(t), handlers.ID("check"))
		opts := webhook.Options{Name: name, URL: rr.url(), CertSecret: secret, CheckInterval: 200 * time.Millisecond}
		op, err := envtest.RunOperator(ctx, cfg, reg, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}, Webhook: &opts})
		if err != nil {
			t.Fatalf("starting replica %d: %v", i, err)
		}
		t.Cleanup(func() { _ = op.Stop() })
		srv := op.Manager.GetWebhookServer().(*webhook.Server)
		g.Eventually(func() error { return srv.StartedChecker()(nil) }, timeout).Should(Succeed())
		return srv
	}
	a := replica(0)
	b := replica(1)
	rr.mu.Lock()
	for _, srv := range []*webhook.Server{a, b} {
		rr.backends = append(rr.backends, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Options().Port)))
	}
	rr.mu.Unlock()

	// oneBundle checks that both replicas and the configuration hold the
	// same CA bundle, and returns it.
	oneBundle := func(g Gomega) []byte {
		bundle := a.CABundle()
		g.Expect(bundle).NotTo(BeEmpty())
		g.Expect(b.CABundle()).To(Equal(bundle))
		config := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, config)).To(Succeed())
		g.Expect(config.Webhooks).To(HaveLen(1))
		g.Expect(config.Webhooks[0].ClientConfig.CABundle).To(Equal(bundle))
		return bundle
	}
	// inTurn sends n admission requests, each on a new connection, so that
	// the balancer alternates between the replicas; every one must be
	// admitted by a replica's handler. A request the API server sent on a
	// connection the balancer had just closed is sent again; a certificate
	// the API server does not trust fails the test at once, unless settling:
	// right after a CA rotation the rotated replica serves its new
	// certificate at once, and the API server may not have read the
	// configuration with the new CA in its bundle yet (a window that a
	// rotation that publishes the CA before serving with it would close).
	inTurn := func(n int, settling bool) {
		for i := 0; i < n; i++ {
			before := served[0].Load() + served[1].Load()
			g.Eventually(func() error {
				err := k8s.Create(ctx, example(t, ns, "ok"), client.DryRunAll)
				if err != nil && !settling && (strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "tls:")) {
					return StopTrying("the API server does not trust a replica").Wrap(err)
				}
				return err
			}, timeout).Should(Succeed())
			g.Expect(served[0].Load() + served[1].Load()).To(BeNumerically(">", before))
			rr.closeAll()
		}
	}

	var first []byte
	g.Eventually(func(g Gomega) { first = oneBundle(g) }, timeout).Should(Succeed())
	inTurn(6, false)
	g.Expect(served[0].Load()).To(BeNumerically(">", 0), "replica a served")
	g.Expect(served[1].Load()).To(BeNumerically(">", 0), "replica b served")
	var stored corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret.Name}, &stored)).To(Succeed())
	g.Expect(stored.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(stored.Data["ca.crt"]).To(Equal(first))

	// A new CA on one replica: the other takes it from the Secret; the old
	// CA stays in the bundle, so requests keep being served throughout.
	g.Expect(webhook.Rotate(ctx, a, true)).To(Succeed())
	inTurn(4, true)
	var rotated []byte
	g.Eventually(func(g Gomega) []byte { rotated = oneBundle(g); return rotated }, timeout).ShouldNot(Equal(first))
	g.Expect(strings.Count(string(rotated), "BEGIN CERTIFICATE")).To(Equal(2))
	before := [2]int32{served[0].Load(), served[1].Load()}
	inTurn(6, false)
	g.Expect(served[0].Load()).To(BeNumerically(">", before[0]), "replica a served after the rotation")
	g.Expect(served[1].Load()).To(BeNumerically(">", before[1]), "replica b served after the rotation")
	g.Expect(oneBundle(g)).To(Equal(rotated))
}

func TestReplicasStartingTogetherAgreeOnOneCertificate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ref := webhook.SecretRef{Namespace: ns, Name: "together"}
	const n = 4
	var wg sync.WaitGroup
	bundles, serials, errs := make([][]byte, n), make([]string, n), make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bundles[i], serials[i], errs[i] = webhook.NewSecretCertificates(context.Background(), k8s, ref)
		}()
	}
	wg.Wait()
	for i := range n {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(bundles[i]).To(Equal(bundles[0]), "replica %d", i)
		g.Expect(serials[i]).To(Equal(serials[0]), "replica %d", i)
	}
	g.Expect(strings.Count(string(bundles[0]), "BEGIN CERTIFICATE")).To(Equal(1))
}

func TestACertificateSecretExcludesOtherCertificateSources(t *testing.T) {
	ref := &webhook.SecretRef{Namespace: "ops", Name: "certs"}
	for _, tc := range []struct {
		opts webhook.Options
		want string
	}{
		{webhook.Options{Name: "x.gopf.dev", CertSecret: &webhook.SecretRef{Name: "certs"}}, "needs a namespace and a name"},
		{webhook.Options{Name: "x.gopf.dev", CertSecret: ref, CertificatesFromFiles: true}, "either from files or from the Secret ops/certs"},
		{webhook.Options{Name: "x.gopf.dev", CertSecret: ref, CertDir: t.TempDir()}, "or in the Secret ops/certs, not both"},
	} {
		_, err := webhook.NewServer(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func TestTheCertificateSecretFlag(t *testing.T) {
	var o webhook.Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--webhook-cert-secret", "ops/certs"}); err != nil {
		t.Fatal(err)
	}
	if o.CertSecret == nil || *o.CertSecret != (webhook.SecretRef{Namespace: "ops", Name: "certs"}) {
		t.Errorf("CertSecret = %+v", o.CertSecret)
	}
	for _, bad := range []string{"certs", "/certs", "ops/", "a/b/c"} {
		if err := fs.Parse([]string{"--webhook-cert-secret", bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestAServerWithACertificateSecretNeedsSetup(t *testing.T) {
	srv, err := webhook.NewServer(webhook.Options{Name: "x.gopf.dev", CertSecret: &webhook.SecretRef{Namespace: "ops", Name: "certs"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "needs webhook.Setup") {
		t.Errorf("Start without Setup: %v", err)
	}
}

// Replicas whose server runs for the finalizer webhook alone
// (FinalizersAlways, no admission handlers) keep one certificate in the
// Secret too, as the README's several replicas behind a Service do: both
// serve a certificate that the configuration's CA bundle verifies, and a
// new object gets the finalizer at admission.
func TestReplicasWithOnlyTheFinalizerWebhookShareTheCertificateSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	rr := newRoundRobin(t)
	secret := &webhook.SecretRef{Namespace: ns, Name: "webhook-certs"}
	name := testLabel(t) + ".test.gopf.dev"

	var servers []*webhook.Server
	for i := range 2 {
		reg := handlers.NewRegistry()
		handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			return nil, nil
		}, selectTest(t), handlers.ID("delete_fn"))
		opts := webhook.Options{Name: name, URL: rr.url(), CertSecret: secret, Finalizers: webhook.FinalizersAlways}
		op, err := envtest.RunOperator(ctx, cfg, reg, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}, Webhook: &opts})
		if err != nil {
			t.Fatalf("starting replica %d: %v", i, err)
		}
		t.Cleanup(func() { _ = op.Stop() })
		srv := op.Manager.GetWebhookServer().(*webhook.Server)
		g.Eventually(func() error {
			select {
			case <-op.Done():
				return StopTrying("replica stopped").Wrap(op.Err())
			default:
				return srv.StartedChecker()(nil)
			}
		}, timeout).Should(Succeed(), "replica %d", i)
		servers = append(servers, srv)
	}
	rr.mu.Lock()
	for _, srv := range servers {
		rr.backends = append(rr.backends, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Options().Port)))
	}
	rr.mu.Unlock()

	var stored corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret.Name}, &stored)).To(Succeed())
	bundle := stored.Data["ca.crt"]
	g.Expect(bundle).NotTo(BeEmpty())
	g.Eventually(func() []byte { return finalizerWebhookIn(g, name).ClientConfig.CABundle }, timeout).Should(Equal(bundle))
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(bundle)).To(BeTrue())
	for i, srv := range servers {
		g.Expect(srv.CABundle()).To(Equal(bundle), "replica %d", i)
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Options().Port)), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		g.Expect(err).NotTo(HaveOccurred(), "replica %d serves a certificate the CA bundle does not verify", i)
		g.Expect(conn.Close()).To(Succeed())
	}
	g.Eventually(func() []string {
		obj := example(t, ns, "")
		g.Expect(k8s.Create(ctx, obj, client.DryRunAll)).To(Succeed())
		return obj.Finalizers
	}, timeout).Should(ContainElement(gopfFinalizer))
}
