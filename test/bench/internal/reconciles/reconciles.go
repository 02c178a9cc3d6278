package reconciles

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// EnvFile names the environment variable with the file to write snapshots
// to. Unset: none are written.
const EnvFile = "GOPF_BENCH_RECONCILES"

// EnvObjects names the environment variable with the number of objects
// the operator is to see: once a snapshot shows it idle after as many
// reconciles, no more are written. Unset or 0: snapshots are written for
// the life of the process.
const EnvObjects = "GOPF_BENCH_RECONCILES_OBJECTS"

// Interval is how often the snapshot is written.
const Interval = 50 * time.Millisecond

// Snapshot is the state of an operator's controllers of the benchmark's
// kind (those whose name contains the kind's name).
type Snapshot struct {
	// Reconciles counts finished reconciles, whatever their result.
	Reconciles int64
	// Queued counts requests waiting in the work queue.
	Queued int64
	// Active counts reconciles running now.
	Active int64
}

// Idle reports whether the operator has finished at least n reconciles and
// has nothing queued or running.
func (s Snapshot) Idle(n int) bool { return s.Reconciles >= int64(n) && s.Queued == 0 && s.Active == 0 }

// Start writes a snapshot of the controllers of kind (a lower-case kind
// name, such as "kopfexample") every Interval to the file EnvFile names, if
// it names one, until the operator has seen EnvObjects objects. Reading the
// metrics registry costs CPU, which is why it stops. It also starts
// StartCounts. Problems are reported on stderr and never stop the
// operator.
func Start(kind string) {
	StartCounts(kind)
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	objects := 0
	if v := os.Getenv(EnvObjects); v != "" {
		var err error
		if objects, err = strconv.Atoi(v); err != nil {
			fmt.Fprintln(os.Stderr, "reconciles:", EnvObjects, err)
			return
		}
	}
	go func() {
		tick := time.NewTicker(Interval)
		defer tick.Stop()
		for range tick.C {
			s, err := write(path, kind)
			if err != nil {
				fmt.Fprintln(os.Stderr, "reconciles:", err)
				return
			}
			if objects > 0 && s.Idle(objects) {
				return
			}
		}
	}()
}

func write(path, kind string) (Snapshot, error) {
	var s Snapshot
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return s, err
	}
	for _, f := range families {
		var into *int64
		switch f.GetName() {
		case metricReconciles:
			into = &s.Reconciles
		case "workqueue_depth":
			into = &s.Queued
		case "controller_runtime_active_workers":
			into = &s.Active
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				// The kind's controllers: "kopfexample" in the
				// baselines, "gopf-kopfexample.kopf.dev" in gopf.
				if (l.GetName() == "controller" || l.GetName() == "name") && strings.Contains(l.GetValue(), kind) {
					*into += int64(m.GetCounter().GetValue() + m.GetGauge().GetValue())
					break
				}
			}
		}
	}
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d %d\n", s.Reconciles, s.Queued, s.Active), 0o644); err != nil {
		return s, err
	}
	return s, os.Rename(tmp, path)
}

// Read returns the last snapshot written to path.
func Read(path string) (Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	if _, err := fmt.Sscan(string(data), &s.Reconciles, &s.Queued, &s.Active); err != nil {
		return Snapshot{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return s, nil
}
