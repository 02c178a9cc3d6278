//go:build linux

package sharder

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/test/bench"
	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

// The environment the test takes the sharder from, and its size.
const (
	// envBin names the sharder's binary (its cmd/sharder built).
	envBin = "GOPF_SHARDER_BIN"
	// envSrc names the sharder's source folder, whose ControllerRing CRD
	// the control plane installs.
	envSrc = "GOPF_SHARDER_SRC"
	// envObjects is how many objects the test handles (default 300).
	envObjects = "GOPF_SHARDER_OBJECTS"
)

// phaseTimeout bounds each phase's wait for the replicas.
const phaseTimeout = 5 * time.Minute

// settleTimeout bounds the wait for the sharder to have every object on a
// live replica: it retries a failed resync after a back-off that doubles
// from 5 s up to its sync period (5 min by default).
const settleTimeout = 6 * time.Minute

// loadWorkers is how many requests the test has in flight.
const loadWorkers = 32

// TestReferenceSharder runs gopf's replicas under the reference sharder
// through creates, a replica joining, updates during a rolling restart and
// a scale-down, and deletes, and checks every handler call (see the
// package's documentation).
func TestReferenceSharder(t *testing.T) {
	bin, src := os.Getenv(envBin), os.Getenv(envSrc)
	switch {
	case bin == "" && src == "":
		t.Skipf("set %s (the sharder's binary) and %s (its source folder) to run gopf under the reference sharder; `make sharder-check` does", envBin, envSrc)
	case bin == "" || src == "":
		t.Fatalf("%s=%q and %s=%q: set both, the sharder's binary and its source folder", envBin, bin, envSrc, src)
	}
	n := 300
	if v := os.Getenv(envObjects); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 5 {
			t.Fatalf("%s=%q: want a number of objects, at least 5", envObjects, v)
		}
	}
	crlog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r, rec, s := setUp(ctx, t, bin, src)
	run := &run{t: t, r: r, rec: rec, s: s, names: bench.Names("kex", n)}
	run.load = bench.NewLoad(r.c, r.ns, run.names, loadWorkers)
	run.phases(ctx)
	if err := r.stopAll(); err != nil {
		t.Error(err)
	}
	cs, err := calls.Read(r.calls)
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(run.names, cs, rec.histories())
	run.report(v, cs)
	if v.Failed() {
		t.Errorf("the handler calls under the reference sharder break the contract: %s", v.Summary())
	}
}

// setUp starts the control plane, the sharder with a ControllerRing named
// after the ring, the test's recorder and the ring of gopf replicas, none
// running yet. Everything stops when the test ends.
func setUp(ctx context.Context, t *testing.T, bin, src string) (*ring, *recorder, *sharder) {
	if err := portFree(); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	gopf, err := bench.BuildGopf(ctx, root, work)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(src, crdOfSharder)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	r := &ring{name: "gopf-sharder", ns: "gopf-sharder", bin: gopf, work: work,
		kubeconfig: filepath.Join(work, "admin.kubeconfig"), calls: filepath.Join(work, "calls")}
	if err := cp.WriteKubeconfig(r.kubeconfig); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kopfv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if r.c, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}); err != nil {
		t.Fatal(err)
	}
	s := startSharderFor(ctx, t, r, bin, work)
	rec, err := startRecorder(ctx, cp.Config, scheme, r.ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.stopAll() })
	return r, rec, s
}

// startSharderFor starts the sharder, with a serving certificate of the
// test's, and creates the ring's ControllerRing.
func startSharderFor(ctx context.Context, t *testing.T, r *ring, bin, work string) *sharder {
	certDir, ca, cleanup, err := servingCerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cleanup() })
	s, err := startSharder(bin, work, r.kubeconfig, certDir, ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
	})
	if err := createRing(ctx, r.c, s, r.name); err != nil {
		t.Fatal(err)
	}
	return s
}
