/*
Package envtest is gopf's testing toolkit: it starts a real control plane
(kube-apiserver and etcd, through controller-runtime's envtest) with the CRDs
an operator needs, and runs a gopf operator in-process against it.

The control-plane binaries come from KUBEBUILDER_ASSETS or, when that is not
set, from the bin/k8s folder that `make envtest` (hack/setup-envtest.sh)
fills by building them from the Go module proxy. Nothing is downloaded at test
time.

	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
	...
	defer cp.Stop()
	op, err := envtest.RunOperator(ctx, cp.Config, reg, envtest.OperatorOptions{Scheme: scheme})
	...
	defer op.Stop()

gopf's own integration tests use this package, and so does `make run` when
no cluster is reachable.
*/
package envtest
