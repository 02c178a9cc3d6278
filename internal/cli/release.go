package cli

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// startupSettle is how long after the caches sync the binary's pages are
// released: by then the first reconciles of the objects found at start
// have begun, and the code that only start-up runs (package inits, flag
// parsing, the manager's construction) is done.
const startupSettle = 10 * time.Second

// pageRelease releases the pages of the operator's binary once start-up is
// over (--release-startup-pages). A process maps its binary's code and
// read-only data from the file as it runs them, 64 KiB around each page
// it touches, and keeps them: about 25 MiB for an operator on
// controller-runtime, most of it client-go's registrations of API types
// and other code that runs once. The kernel drops those pages; what the
// operator runs afterwards comes back from the file on first use, so its
// resident memory settles at the code it really uses (about 6 MiB idle).
type pageRelease struct {
	cache   cache.Cache
	settle  time.Duration
	release func() (int64, error)
	log     logr.Logger
}

// Start waits for the caches and the settling time, releases the pages
// once, and returns.
func (r pageRelease) Start(ctx context.Context) error {
	if !r.cache.WaitForCacheSync(ctx) {
		return nil // stopped before the caches synced
	}
	t := time.NewTimer(r.settle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	n, err := r.release()
	if err != nil {
		r.log.Info("could not release the binary's start-up pages; resident memory stays as it is", "error", err.Error())
		return nil
	}
	r.log.V(1).Info("released the binary's start-up pages", "mappedKiB", n/1024)
	return nil
}

// NeedLeaderElection is false: a standby replica pays for its binary too.
func (pageRelease) NeedLeaderElection() bool { return false }
