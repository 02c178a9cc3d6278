package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// A clean stop of an operator with handlers, timers and daemons at work
// logs no error, and the patch a daemon leaves as it stops is applied.
func TestACleanStopLogsNoErrorAndAppliesTheDaemonsLastPatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return "created", nil
	}, handlers.ID("create"))
	handlers.OnTimer(reg, 50*time.Millisecond, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("tick"))
	running := make(chan string, 10)
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		running <- c.Name
		<-d.Stopping()
		c.Patch.SetStatus("farewell", string(d.StopReason()))
		return nil
	}, handlers.ID("watcher"))
	op := runOperator(t, cfg, ns, reg)

	var keys []client.ObjectKey
	for i := range 3 {
		obj := newExample(ns, fmt.Sprintf("stop-%d", i))
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(obj))
	}
	for range keys {
		g.Eventually(running, timeout).Should(Receive())
	}
	before := logs.Len()
	g.Expect(op.Stop()).To(Succeed())
	g.Expect(logs.Since(before)).NotTo(ContainElement(HavePrefix("ERROR")), "a clean stop logged an error")
	for _, key := range keys {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
		g.Expect(k8s.Get(ctx, key, u)).To(Succeed())
		got, _, _ := unstructured.NestedString(u.Object, "status", "farewell")
		g.Expect(got).To(Equal(string(handlers.StopOperatorExiting)), "the daemon's patch at the stop of %s", key.Name)
	}
}
