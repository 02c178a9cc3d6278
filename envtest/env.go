package envtest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
)

// T is what Run and New need of a test. *testing.T and *testing.B have it,
// and so has Ginkgo's GinkgoT().
type T interface {
	Helper()
	Name() string
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Env is one test's share of the control plane that Main started: a client,
// a namespace of its own, and the operators it runs there. Everything is
// undone when the test ends: the operators stop (a failure to stop fails
// the test), the namespace is deleted, Ctx is cancelled.
type Env struct {
	// Ctx is the test's context; it is cancelled when the test ends, after
	// the operators have stopped.
	Ctx context.Context
	// Client reads and writes straight at the API server (no cache, so it
	// sees every write at once) as a cluster administrator, with the
	// operator's scheme. Once Run or Start has limited an operator to the
	// test's namespace (their default), Client refuses to create a
	// namespaced object in any other namespace, such as "default": the
	// operator would never see it, and the test would wait for handlers
	// that are never called. To create objects elsewhere on purpose, give
	// the operator its namespaces (OperatorOptions.Namespaces, "*" for
	// all), or use the client of an Env from New.
	Client client.Client
	// Namespace is a namespace made for this test, named after it.
	Namespace string
	// Operator is the operator Run started, or the latest one Start or
	// Restart started; nil until then.
	Operator *Operator
	// ControlPlane is the control plane the test runs on.
	ControlPlane *ControlPlane

	t      T
	scheme *runtime.Scheme
	// scoped is set once an operator runs limited to Namespace by default.
	scoped atomic.Bool
}

// Run gives a test, in one call, what it needs to exercise an operator: a
// client, a new namespace, and the handlers of reg running in an operator
// limited to that namespace (set opts.Namespaces to watch others, e.g. "*"
// for all; until then Env.Client refuses to create objects elsewhere). The
// operator's scheme is opts.Scheme (default: that of opts.Main, else
// client-go's built-in kinds), and so is the client's. Handlers are retried after
// DefaultBackoff unless opts say otherwise. Run fails the test if any of
// this cannot be done.
//
// Run needs the control plane of Main (or MainWith), so the package's
// TestMain calls it with the CRDs the operator needs:
//
//	func TestMain(m *testing.M) {
//		envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../config/crd/bases"}})
//	}
func Run(t T, reg *handlers.Registry, opts OperatorOptions) *Env {
	t.Helper()
	opts, err := opts.withMain()
	if err != nil {
		t.Fatalf("envtest: %v", err)
		return nil
	}
	e := New(t, opts.Scheme)
	e.Start(reg, opts)
	return e
}

// New is Run without the operator: the client and the namespace, for tests
// that prepare objects before an operator starts (then Start it) or that
// build a manager of their own. A nil scheme means client-go's built-in
// kinds.
func New(t T, scheme *runtime.Scheme) *Env {
	t.Helper()
	cp := running()
	if cp == nil {
		t.Fatalf("envtest: no control plane runs: call envtest.Main(m, envtest.Options{...}) from TestMain")
		return nil
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	if err := completeScheme(scheme); err != nil {
		t.Fatalf("envtest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // last: cleanups run in reverse order
	c, err := cp.client(scheme)
	if err != nil {
		t.Fatalf("envtest: creating a client: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("envtest: creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		// envtest runs no namespace controller: the namespace stays
		// Terminating, with its objects, but takes no new ones.
		if err := c.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("envtest: deleting namespace %s: %v", ns.Name, err)
		}
	})
	e := &Env{Ctx: ctx, Namespace: ns.Name, ControlPlane: cp, t: t, scheme: scheme}
	e.Client = scopedClient{Client: c, env: e}
	return e
}

// Start runs the handlers of reg in an operator, as Run does: limited to
// the test's namespace unless opts say otherwise, with the Env's scheme
// unless opts.Scheme is set, and stopped when the test ends. It becomes
// e.Operator. A test may start several, such as the members of a peering.
func (e *Env) Start(reg *handlers.Registry, opts OperatorOptions) *Operator {
	e.t.Helper()
	opts, err := opts.withMain()
	if err != nil {
		e.t.Fatalf("envtest: starting the operator: %v", err)
		return nil
	}
	if opts.Scheme == nil {
		opts.Scheme = e.scheme
	}
	if len(opts.Namespaces) == 0 && len(opts.Reconcile.Namespaces) == 0 {
		opts.Namespaces = []string{e.Namespace}
		e.scoped.Store(true)
	}
	op, err := RunOperator(e.Ctx, e.ControlPlane.Config, reg, opts)
	if err != nil {
		e.t.Fatalf("envtest: starting the operator: %v", err)
	}
	e.stopAtCleanup(op)
	e.Operator = op
	return op
}

// scopedClient is Env.Client: it refuses objects that the Env's operators
// cannot see because of the namespace Run or Start chose for them.
type scopedClient struct {
	client.Client
	env *Env
}

// Create creates obj unless the Env's operator is limited to the test's
// namespace by default and obj is namespaced elsewhere.
func (c scopedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if ns := obj.GetNamespace(); ns != "" && ns != c.env.Namespace && c.env.scoped.Load() {
		return fmt.Errorf("envtest: not creating %s in namespace %q: the test's operator watches only the test's namespace %q (env.Namespace), "+
			"so its handlers would never see it; create it in env.Namespace, or give OperatorOptions.Namespaces to watch others (\"*\" for all)",
			obj.GetName(), ns, c.env.Namespace)
	}
	return c.Client.Create(ctx, obj, opts...)
}

// Restart restarts e.Operator and returns the new one, which becomes
// e.Operator and is stopped when the test ends. Operator.Restart says what
// survives: the API server's content and the registry's closures, not the
// memos, indexes, cache, timers or daemons.
func (e *Env) Restart() *Operator {
	e.t.Helper()
	if e.Operator == nil {
		e.t.Fatalf("envtest: Restart: no operator was started")
		return nil
	}
	op, err := e.Operator.Restart(e.Ctx)
	if err != nil {
		e.t.Fatalf("envtest: restarting the operator: %v", err)
	}
	e.stopAtCleanup(op)
	e.Operator = op
	return op
}

// stopAtCleanup stops op when the test ends and fails the test if op
// returned an error (Stop reports the same error however often it is
// called, so a test may stop op itself earlier).
func (e *Env) stopAtCleanup(op *Operator) {
	e.t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			e.t.Errorf("envtest: the operator stopped with an error: %v", err)
		}
	})
}

// namespacePrefix turns a test's name into the GenerateName of its
// namespace: "TestTheDaemonStops/deleted" becomes "thedaemonstops-deleted-".
func namespacePrefix(test string) string {
	var b strings.Builder
	dash := true // no leading dash
	for _, r := range strings.ToLower(strings.TrimPrefix(test, "Test")) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	name := strings.TrimSuffix(b.String(), "-")
	if name == "" {
		name = "test"
	}
	return name + "-"
}
