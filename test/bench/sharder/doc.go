// Package sharder checks that gopf's replicas work under the reference
// sharder, timebertt/kubernetes-controller-sharding's cmd/sharder, as
// docs/sharding.md promises ("With the reference sharder").
//
// TestReferenceSharder starts a local control plane, the sharder (its
// webhook served by URL with a certificate of the test's, a ControllerRing
// for kopfexamples) and the benchmark's gopf operator as replicas with
// --shard-external-assigner, each recording its handler calls. It creates
// objects on two replicas, lets a third join, updates every object while
// the three are replaced one by one (a rolling restart: the new replica up
// before the old one stops) and one more stops (a scale-down), and deletes
// every object. Then it checks every handler call: each object had exactly
// one create, one update and one delete call, each on the shard the object
// was labelled for when the call's outcome was stored, and no object kept
// a drain label or a finalizer. It logs the figures docs/sharding.md
// quotes: calls per cause, repeats, the spread over the shards and the
// time of each phase.
//
// The test needs the sharder's binary (GOPF_SHARDER_BIN) and its source
// folder (GOPF_SHARDER_SRC, for the ControllerRing CRD) and is skipped
// without them; `make sharder-check` builds the binary from the source
// folder and runs it. The sharder's webhook server listens on port 9443,
// which it does not let one change: the port must be free.
package sharder
