package gopf_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestStoppingAnOperatorOfEveryKindWhileItsKindsStartLogsNoError(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) (any, error) { return nil, nil },
		handlers.ForKinds(func(schema.GroupVersionKind) bool { return true }), handlers.ID("everything"))
	// A user who may read KopfExamples only: the informers of the other
	// kinds never sync, so the stop comes while they start.
	mgr, err := ctrl.NewManager(readOnlyUser(env), ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{env.Namespace: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gopf.SetupWithManager(mgr, reg, reconcile.Options{Namespaces: []string{env.Namespace}})).To(Succeed())

	mark := logs.mark()
	ctx, cancel := context.WithCancel(env.Ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	g.Eventually(func() bool { return logs.contains(mark, "kind is served now") }, timeout).Should(BeTrue(), "no kind started")
	cancel()
	g.Expect(<-stopped).To(Succeed())
	errs := func() []string {
		var errs []string
		for _, l := range logs.since(mark, true) {
			// The user's lacking permissions are reported by design: once
			// by gopf, and by each informer refused a list.
			if !strings.Contains(l.msg, "lacks permissions") && !strings.Contains(l.msg, "Failed to watch") {
				errs = append(errs, fmt.Sprintf("%s: %v", l.msg, l.err))
			}
		}
		return errs
	}
	// Some sources log from goroutines of their own, after the stop.
	g.Consistently(errs, time.Second).Should(BeEmpty(), "a stop during the start is no error")
}
