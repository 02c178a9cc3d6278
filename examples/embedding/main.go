// Command embedding shows gopf inside an operator that already has a
// kubebuilder-style main.go: it builds its own controller-runtime Manager
// with the usual flags, adds a plain Reconciler, and adds gopf's handlers to
// the same manager with gopf.SetupWithManager. Both share one informer
// cache, one client, one metrics registry and one leader election.
//
//   - ConfigMapKeys, a plain Reconciler, annotates every ConfigMap labelled
//     embedding.example.gopf.dev/managed=true with its number of keys.
//   - A gopf create handler on KopfExample lists those ConfigMaps through
//     the manager's cached client and returns what the Reconciler wrote.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// The label that selects ConfigMaps, and the annotation ConfigMapKeys writes.
const (
	managedLabel   = "embedding.example.gopf.dev/managed"
	keysAnnotation = "embedding.example.gopf.dev/keys"
)

// The manager's role: the ConfigMaps for ConfigMapKeys, and what gopf's
// handlers need, as `go run . --print-rbac=markers` prints it (the
// ConfigMaps again, since the handler declares them with handlers.Uses;
// Events; CRDs, whose status schema says where gopf keeps its state); and
// the Leases of leader election. main_test.go runs the example under the
// role that controller-gen makes of these lines.
//
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=patch
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

func main() {
	var metricsAddr, probeAddr string
	var leaderElect bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Enable leader election, so that one replica works at a time.")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	runRBAC := gopf.AddRBACFlags(flag.CommandLine) // --print-rbac, --check-rbac
	flag.Parse()
	if ran, err := runRBAC(os.Stdout, registry(), newScheme()); ran {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "embedding.example.gopf.dev",
	})
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if err := setup(mgr); err != nil {
		log.Error(err, "unable to set up the controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up the ready check")
		os.Exit(1)
	}
	log.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "problem running the manager")
		os.Exit(1)
	}
}

// newScheme knows the built-in kinds and KopfExample.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(kopfv1.AddToScheme(scheme))
	return scheme
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// setup adds the plain Reconciler and gopf's handlers to mgr.
func setup(mgr manager.Manager) error {
	if err := (&ConfigMapKeys{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	return gopf.SetupWithManager(mgr, registry())
}

// handlers registers gopf's handlers. c.Client is the manager's client, the
// one ConfigMapKeys uses: it reads from the shared cache.
func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		var list corev1.ConfigMapList
		if err := c.Client.List(ctx, &list, client.InNamespace(obj.Namespace), client.MatchingLabels{managedLabel: "true"}); err != nil {
			return nil, err
		}
		keys := map[string]any{}
		for _, cm := range list.Items {
			keys[cm.Name] = cm.Annotations[keysAnnotation] // as ConfigMapKeys wrote it
		}
		return map[string]any{"configmaps": keys}, nil
	}, handlers.Uses(&corev1.ConfigMap{}, "list"))
	return reg
}

// ConfigMapKeys is a plain controller-runtime Reconciler, as kubebuilder
// scaffolds them: it annotates each managed ConfigMap with its number of
// keys.
type ConfigMapKeys struct {
	client.Client
}

// Reconcile brings one ConfigMap's annotation up to date.
func (r *ConfigMapKeys) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	keys := strconv.Itoa(len(cm.Data) + len(cm.BinaryData))
	if cm.Annotations[keysAnnotation] == keys {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[keysAnnotation] = keys
	return ctrl.Result{}, r.Patch(ctx, &cm, patch)
}

// SetupWithManager watches the managed ConfigMaps.
func (r *ConfigMapKeys) SetupWithManager(mgr ctrl.Manager) error {
	managed := predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetLabels()[managedLabel] == "true" })
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithPredicates(managed)).
		Named("configmap-keys").
		Complete(r)
}
