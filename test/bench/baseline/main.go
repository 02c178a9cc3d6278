package main

import (
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/profiling"
	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
	"github.com/gopf-dev/gopf/test/kinds"
)

func main() {
	profiling.Start()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run() error {
	var metricsAddr, probeAddr string
	var concurrency, burst int
	var qps float64
	var unstructuredObjects, tuned bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the health probe endpoint binds to; 0 disables it.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 16, "How many objects are reconciled at once.")
	flag.Float64Var(&qps, "kube-api-qps", 0, "Client-side limit on requests per second to the API server; 0 keeps controller-runtime's default (none).")
	flag.IntVar(&burst, "kube-api-burst", 0, "Burst above --kube-api-qps.")
	flag.BoolVar(&unstructuredObjects, "unstructured", false, "Handle the objects as unstructured objects instead of Go types.")
	flag.BoolVar(&tuned, "tuned", false, "Handle the objects as unstructured objects, writing literal merge-patch bodies (TunedReconciler).")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	handlers, err := scenario.Handlers()
	if err != nil {
		return err
	}
	kind, err := scenario.KindFromEnv()
	if err != nil {
		return err
	}
	periodic, err := scenario.Periodic()
	if err != nil {
		return err
	}
	interval, err := scenario.Interval()
	if err != nil {
		return err
	}
	retryDelay, err := scenario.RetryDelay()
	if err != nil {
		return err
	}
	if tuned && periodic != "" {
		return fmt.Errorf("--tuned with %s=%s: the periodic work has one reconciler, on Go types", scenario.EnvPeriodic, periodic)
	}
	reconciles.Start(kind.Name)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kopfv1.AddToScheme, kinds.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg := ctrl.GetConfigOrDie()
	if qps > 0 {
		cfg.QPS, cfg.Burst = float32(qps), burst
	}
	mo := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
	}
	if unstructuredObjects || tuned {
		// Without this, the client reads unstructured objects from the API
		// server on every Get.
		mo.Client = client.Options{Cache: &client.CacheOptions{Unstructured: true}}
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	c := mgr.GetClient()
	switch {
	case periodic != "":
		// A timer and a daemon are the same work for a reconciler.
		err = b.For(&kopfv1.KopfExample{}).Complete(&PeriodicReconciler{Client: c, Interval: interval})
	case tuned:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind.GVK)
		err = b.For(u).Complete(&TunedReconciler{Client: c, Handlers: handlers, GVK: kind.GVK, Annotations: kind != scenario.KopfExample})
	case kind == scenario.KopfExample && unstructuredObjects:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kopfExampleGVK)
		err = b.For(u).Complete(&UnstructuredReconciler{Client: c, Handlers: handlers})
	case kind == scenario.KopfExample:
		err = b.For(&kopfv1.KopfExample{}).Complete(&Reconciler{Client: c, Handlers: handlers, RetryDelay: retryDelay})
	case unstructuredObjects:
		newObj := func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(kind.GVK)
			return u
		}
		err = b.For(newObj()).Complete(&AnnotatedReconciler[*unstructured.Unstructured]{Client: c, Handlers: handlers, New: newObj, Unstructured: true})
	case kind == scenario.Widget:
		newObj := func() *kinds.Widget { return &kinds.Widget{} }
		err = b.For(newObj()).Complete(&AnnotatedReconciler[*kinds.Widget]{Client: c, Handlers: handlers, New: newObj})
	default:
		newObj := func() *corev1.Pod { return &corev1.Pod{} }
		err = b.For(newObj()).Complete(&AnnotatedReconciler[*corev1.Pod]{Client: c, Handlers: handlers, New: newObj})
	}
	if err != nil {
		return fmt.Errorf("creating the controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
