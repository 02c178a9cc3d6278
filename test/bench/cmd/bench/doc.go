// Command bench runs gopf's benchmark: the same workload against two
// hand-written controller-runtime reconcilers (typed and unstructured) and
// against a gopf operator, on one control plane, one after the other (see
// package bench). It prints the results as a table and writes them as JSON
// and as Markdown.
//
// `make bench` runs it with the defaults and writes BENCHMARKS.md:
//
//	go run ./test/bench/cmd/bench [-n 1000] [-idle 5s] [-scenario all]
//	    [-rounds 3] [-scale-n 10000] [-scale-rounds 1]
//	    [-periodic-n 10000] [-ticking 1m]
//	    [-json bin/bench/results.json] [-markdown BENCHMARKS.md]
//	    [-profile-dir DIR] [-workdir DIR]
//
// A larger scale run: -scenario scale -scale-n 50000. The sharded scenario
// (gopf as 1, 2 and 4 replicas of a ring, replicas joining, leaving and
// killed; `make bench-sharded`): -scenario sharded [-sharded-n 10000]
// [-sharded-chaos-replicas 2] [-kill-every 30s].
//
// -profile-dir takes a CPU profile of every operator run and a heap profile
// while its objects are idle (in the sharded scenario, of every replica of
// the scaling runs), and a CPU profile of kube-apiserver during each create,
// update and delete phase; read them with `go tool pprof -top`.
// -workdir keeps the binaries, kubeconfigs, the audit log and the
// operators' output.
//
// It needs kube-apiserver and etcd (KUBEBUILDER_ASSETS, or bin/k8s after
// `make envtest`) and takes several minutes. It exits with status 0 when
// every run completed, whether or not gopf met its targets; a missed target
// is reported in the table, not as a failure.
package main
