package faults_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/webhook"
)

// How the webhook gate treats the API server's connections to the webhook
// server.
const (
	gatePass   int32 = iota // forwards them
	gateDown                // closes them at once, as a server that is gone
	gateRefuse              // answers with bytes that are not TLS
	gateSlow                // holds them past the webhook's timeout
)

// webhookGate is a TCP relay between the API server and the operator's
// webhook server that can take the webhook away in several ways.
type webhookGate struct {
	ln      net.Listener
	backend atomic.Value // the webhook server's address
	mode    atomic.Int32
	wg      sync.WaitGroup
	release chan struct{} // closed when the test ends, to let held connections go

	mu     sync.Mutex
	relays map[net.Conn]bool // connections relayed to the webhook server
}

// set changes the gate's mode. It cuts the relayed connections, which
// the API server would otherwise keep using for later requests.
func (g *webhookGate) set(mode int32) {
	g.mode.Store(mode)
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.relays {
		_ = c.Close()
	}
}

func newWebhookGate(t *testing.T) *webhookGate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &webhookGate{ln: ln, release: make(chan struct{}), relays: map[net.Conn]bool{}}
	g.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.wg.Go(func() { g.serve(c) })
		}
	})
	t.Cleanup(func() {
		close(g.release)
		_ = ln.Close()
		g.wg.Wait()
	})
	return g
}

func (g *webhookGate) port() int { return g.ln.Addr().(*net.TCPAddr).Port }

func (g *webhookGate) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	switch g.mode.Load() {
	case gateDown:
		return
	case gateRefuse:
		_, _ = io.WriteString(c, "HTTP/1.1 500 not a webhook\r\n\r\n")
		return
	case gateSlow:
		select {
		case <-time.After(5 * time.Second):
		case <-g.release:
		}
		return
	}
	addr, _ := g.backend.Load().(string)
	b, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer func() { _ = b.Close() }()
	g.mu.Lock()
	g.relays[c] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.relays, c)
		g.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	select {
	case <-done:
	case <-g.release:
	}
	_ = c.Close()
	_ = b.Close()
	<-done
}

// Whatever happens to the finalizer webhook, no create is refused or lost:
// through the webhook a create costs one write, and when the webhook is
// down, refuses or is too slow, the engine adds the finalizer itself, as it
// does without a webhook (two writes). Every object is handled once and
// released on deletion.
func TestAFinalizerWebhookThatFailsCostsAWriteAndLosesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	gate := newWebhookGate(t)
	var calls callLog
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return "created", nil
	}, handlers.ID("create_fn"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("delete_fn"))
	var requests envtest.RequestCounter
	name := "faults-finalizers.test.gopf.dev"
	op := runOperator(t, cfg, ns, reg, func(o *envtest.OperatorOptions) {
		o.Requests = &requests
		o.Webhook = &webhook.Options{
			Name: name, CertDir: t.TempDir(), Finalizers: webhook.FinalizersAlways,
			URL: "https://127.0.0.1:" + strconv.Itoa(gate.port()),
		}
	})
	gate.backend.Store("127.0.0.1:" + strconv.Itoa(op.Manager.GetWebhookServer().(*webhook.Server).Options().Port))
	g.Eventually(func(g Gomega) {
		var mc admissionregistrationv1.MutatingWebhookConfiguration
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, &mc)).To(Succeed())
		g.Expect(mc.Webhooks).To(HaveLen(1))
	}, timeout).Should(Succeed())

	const perMode = 3
	modes := []struct {
		name       string
		mode       int32
		atCreation bool // the finalizer comes with the create
	}{{"through the webhook", gatePass, true}, {"webhook down", gateDown, false}, {"webhook refusing", gateRefuse, false}, {"webhook slow", gateSlow, false}}
	var figures []string
	var all []types.NamespacedName
	for _, m := range modes {
		gate.set(m.mode)
		requests.Reset()
		var keys []types.NamespacedName
		for i := range perMode {
			obj := newExample(ns, fmt.Sprintf("m%d-%d", m.mode, i))
			g.Expect(k8s.Create(ctx, obj)).To(Succeed(), m.name)
			if m.atCreation {
				g.Expect(obj.Finalizers).To(ConsistOf("gopf.dev/finalizer"), "%s: the created object", m.name)
			} else {
				g.Expect(obj.Finalizers).To(BeEmpty(), "%s: the created object", m.name)
			}
			keys = append(keys, client.ObjectKeyFromObject(obj))
		}
		for _, key := range keys {
			g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key)) }, timeout).Should(BeTrue(), "%s: %s", m.name, key)
		}
		writes := func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }
		want := map[bool]int{true: perMode, false: 2 * perMode}[m.atCreation]
		g.Eventually(writes, timeout).Should(Equal(want), "%s: %v", m.name, requests.Snapshot())
		figures = append(figures, fmt.Sprintf("%s: %.2f writes per create", m.name, float64(writes())/perMode))
		all = append(all, keys...)
	}
	gate.set(gatePass)
	for _, key := range all {
		g.Expect(calls.of("create_fn", key.Name)).To(HaveLen(1), "create handler calls of %s", key)
		g.Expect(k8s.Delete(ctx, &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})).To(Succeed())
	}
	for _, key := range all {
		g.Eventually(func() bool {
			err := k8s.Get(ctx, key, &kopfv1.KopfExample{})
			return err != nil && client.IgnoreNotFound(err) == nil
		}, timeout).Should(BeTrue(), "%s was never released", key)
		g.Expect(calls.of("delete_fn", key.Name)).To(HaveLen(1), "delete handler calls of %s", key)
	}
	record(t, "8", outcome{Objects: len(all), Outcome: "held", Figures: joinf(append(figures, "every create handled once, every deletion released")...)})
}
