package robustness_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/kinds"
	"github.com/gopf-dev/gopf/test/robustness"
)

var (
	cfg    *rest.Config
	scheme = envtest.NewScheme(kopfv1.AddToScheme, kinds.AddToScheme)
)

func TestMain(m *testing.M) {
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases", kinds.CRDDir()}},
		BeforeTests: func(cp *envtest.ControlPlane) error {
			cfg = cp.Config
			return nil
		},
		// Every operator and proxy a run started is gone once it is over.
		CheckGoroutines: true,
	})
}

// storages are the storages every class runs with.
var storages = []reconcile.Storage{reconcile.StorageAuto, reconcile.StorageStatus, reconcile.StorageAnnotations, reconcile.StorageKopf}

var storageNames = map[reconcile.Storage]string{
	reconcile.StorageAuto: "StorageAuto", reconcile.StorageStatus: "StorageStatus",
	reconcile.StorageAnnotations: "StorageAnnotations", reconcile.StorageKopf: "StorageKopf",
}

// fixedSeeds are the seeds `make test` runs, one sequence per class and
// storage: the seed of a run is fixedSeeds[(class+storage) % len].
var fixedSeeds = []uint64{7, 9, 31, 35, 42, 44, 49}

// Every class of kind, with every storage that can work on it, keeps
// Kopf's contract through a sequence of random operations: one fixed seed
// each, or the seed GOPF_ROBUSTNESS_SEED gives.
func TestSequences(t *testing.T) {
	seed, given, err := seedFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	for ci, class := range robustness.Classes {
		t.Run(class.Name, func(t *testing.T) {
			t.Parallel()
			for si, storage := range storages {
				t.Run(storageNames[storage], func(t *testing.T) {
					if why := class.Skip[storage]; why != "" {
						t.Skip(why)
					}
					s := fixedSeeds[(ci+si)%len(fixedSeeds)]
					if given {
						s = seed
					}
					runOne(t, class, storage, s)
				})
			}
		})
	}
}

// totals count what TestRandomSequences ran.
var sequences, operations atomic.Int64

// Random sequences, with seeds from the clock, for as long as
// GOPF_ROBUSTNESS_DURATION says (`make robustness`); skipped without it.
func TestRandomSequences(t *testing.T) {
	d := os.Getenv("GOPF_ROBUSTNESS_DURATION")
	if d == "" {
		t.Skip("GOPF_ROBUSTNESS_DURATION is not set: `make robustness` runs random seeds")
	}
	duration, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("GOPF_ROBUSTNESS_DURATION=%q: %v", d, err)
	}
	began := time.Now()
	deadline := began.Add(duration)
	for time.Now().Before(deadline) && !t.Failed() {
		seed := uint64(time.Now().UnixNano())
		class := robustness.Classes[seed%uint64(len(robustness.Classes))]
		storage := storages[(seed/7)%uint64(len(storages))]
		if class.Skip[storage] != "" {
			continue
		}
		t.Run(fmt.Sprintf("%s/%s/%d", class.Name, storageNames[storage], seed), func(t *testing.T) {
			runOne(t, class, storage, seed)
			sequences.Add(1)
			operations.Add(int64(len(robustness.Generate(seed))))
		})
	}
	t.Logf("ran %d sequences, %d operations, in %s of %s", sequences.Load(), operations.Load(), time.Since(began).Round(time.Second), duration)
	fmt.Printf("robustness: ran %d sequences, %d operations\n", sequences.Load(), operations.Load())
}

// runOne runs the sequence of seed on class with storage and fails the test
// with the seed, the sequence, the history and the violations if the
// checker finds any.
func runOne(t *testing.T, class robustness.Class, storage reconcile.Storage, seed uint64) {
	env := envtest.New(t, scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	target := robustness.Target{Ctx: env.Ctx, Config: cfg, Client: c, Scheme: scheme, Namespace: env.Namespace}
	h, err := robustness.Run(target, class, storage, seed)
	if err != nil {
		t.Fatalf("seed %d: the run failed: %v\nreproduce: %s", seed, err, reproduce(class, storage, seed))
	}
	if v := robustness.Check(h); len(v) > 0 {
		var b strings.Builder
		for _, x := range v {
			fmt.Fprintf(&b, "  %s\n", x)
		}
		t.Errorf("seed %d broke the contract:\n%s\nsequence:\n%s\nhistory:\n%s\nreproduce: %s",
			seed, b.String(), robustness.Generate(seed), h.Format(), reproduce(class, storage, seed))
	}
}

// reproduce is the command that runs a failing sequence again.
func reproduce(class robustness.Class, storage reconcile.Storage, seed uint64) string {
	return fmt.Sprintf("GOPF_ROBUSTNESS_SEED=%d go test ./test/robustness -run 'TestSequences/%s/%s$'", seed, class.Name, storageNames[storage])
}

// seedFromEnv returns the seed GOPF_ROBUSTNESS_SEED gives, if set.
func seedFromEnv() (uint64, bool, error) {
	s := os.Getenv("GOPF_ROBUSTNESS_SEED")
	if s == "" {
		return 0, false, nil
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("GOPF_ROBUSTNESS_SEED=%q: %w", s, err)
	}
	return seed, true, nil
}
