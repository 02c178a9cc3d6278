/*
Package envtest is gopf's testing toolkit: it starts a real control plane
(kube-apiserver and etcd, through controller-runtime's envtest) with the CRDs
an operator needs, and runs a gopf operator in-process against it, built as
gopf.Main builds it.

A package's TestMain starts one control plane for all its tests with Main;
each test then gets its client, a namespace of its own and the running
operator in one call to Run, all undone when the test ends:

	func TestMain(m *testing.M) {
		envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
	}

	func TestHello(t *testing.T) {
		env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "world"}}
		...env.Client.Create(env.Ctx, obj)...
		err := envtest.WaitFor(env.Ctx, env.Client, obj, func(obj *kopfv1.KopfExample) bool { ... })
	}

New gives the client and namespace without an operator, for tests that
prepare objects first (then Env.Start) or build a manager of their own.
MainWith adds what larger suites need around their tests: their own logger,
package-level fixtures, a check for leaked goroutines, work after the tests.
Start, Shared and RunOperator are the parts, for use outside of tests
(gopf-dev, behind `make run`, starts its local control plane with Start).

A test operator runs with the engine options and scheme of
OperatorOptions.Main when it is set: give it the gopf.MainOptions the
deployed operator gives gopf.MainWith, so that both use the same prefix,
finalizer and storage. Otherwise it runs with OperatorOptions.Reconcile and
Scheme, which need not match the deployed operator's.

Run limits the operator to the test's namespace; Env.Client then refuses
to create objects in other namespaces (such as "default"), which the
operator would never see. OperatorOptions.Namespaces widens the operator's
view, and with it what the client accepts.

Test operators differ from deployed ones in a few ways that suit tests:
metrics and probe servers are off unless asked for (and metrics are plain
HTTP unless OperatorOptions.SecureMetrics), several operators of one
registry may run in one process, and a handler whose error does not say
when to retry is retried after DefaultBackoff (1 s) instead of 60 s. When a
wait times out, WaitFor's error quotes the progress gopf stored on the
object, so a handler that keeps failing shows its last message.

The control-plane binaries come from KUBEBUILDER_ASSETS or, when that is not
set, from the nearest bin/k8s folder upwards of the test, which `make
envtest` (hack/setup-envtest.sh) fills by building them from the Go module
proxy; the error without them says how to do that in a module of one's own.
Nothing is downloaded at test time.
*/
package envtest
