package reconciles

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// EnvCounts names the environment variable with the file to which the
// operator appends its Counts every CountsInterval, when they changed, for
// its whole life. Unset: none are written. The benchmark reads them with
// ReadCounts to split an operator's reconciles by phase.
const EnvCounts = "GOPF_BENCH_RECONCILE_COUNTS"

// CountsInterval is how often the counts are read and, if changed, written.
const CountsInterval = 200 * time.Millisecond

// Counts are the finished reconciles of an operator's controllers of the
// benchmark's kind since it started, by result, as
// controller_runtime_reconcile_total counts them, at a moment.
type Counts struct {
	// At is when they were read.
	At time.Time
	// Total counts every finished reconcile.
	Total int64
	// Requeue counts those that asked to be requeued with backoff
	// (Result.Requeue), RequeueAfter those that asked to be requeued
	// after a delay (gopf: waiting for the cache to show its own write, or
	// a retry), Errors those that returned an error (conflicts among
	// them).
	Requeue, RequeueAfter, Errors int64
	// ReconcileSeconds is the time the reconciles took, summed
	// (controller_runtime_reconcile_time_seconds); QueueSeconds the time
	// requests waited in the work queue before a worker took them, summed
	// over Dequeued requests (workqueue_queue_duration_seconds).
	ReconcileSeconds, QueueSeconds float64
	Dequeued                       int64
}

// Minus returns the reconciles counted in c and not in o.
func (c Counts) Minus(o Counts) Counts {
	return Counts{At: c.At, Total: c.Total - o.Total, Requeue: c.Requeue - o.Requeue, RequeueAfter: c.RequeueAfter - o.RequeueAfter, Errors: c.Errors - o.Errors,
		ReconcileSeconds: c.ReconcileSeconds - o.ReconcileSeconds, QueueSeconds: c.QueueSeconds - o.QueueSeconds, Dequeued: c.Dequeued - o.Dequeued}
}

// StartCounts appends the counts of the controllers of kind (a lower-case
// kind name) to the file EnvCounts names, if it names one, every
// CountsInterval in which they changed. Problems are reported on stderr
// and never stop the operator.
func StartCounts(kind string) {
	path := os.Getenv(EnvCounts)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciles:", err)
		return
	}
	go func() {
		defer f.Close()
		var last Counts
		tick := time.NewTicker(CountsInterval)
		defer tick.Stop()
		for range tick.C {
			c, err := gatherCounts(kind)
			if err == nil && c.Minus(last) != (Counts{At: c.At}) {
				_, err = fmt.Fprintf(f, "%d %d %d %d %d %g %g %d\n", c.At.UnixNano(), c.Total, c.Requeue, c.RequeueAfter, c.Errors,
					c.ReconcileSeconds, c.QueueSeconds, c.Dequeued)
				last = c
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "reconciles:", err)
				return
			}
		}
	}()
}

// The metrics Counts are read from: controller-runtime's, and client-go's
// work queue's.
const (
	metricReconciles    = "controller_runtime_reconcile_total"
	metricReconcileTime = "controller_runtime_reconcile_time_seconds"
	metricQueueWait     = "workqueue_queue_duration_seconds"
)

// gatherCounts reads controller_runtime_reconcile_total of the kind's
// controllers.
func gatherCounts(kind string) (Counts, error) {
	c := Counts{At: time.Now()}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return c, err
	}
	for _, f := range families {
		name := f.GetName()
		if name != metricReconciles && name != metricReconcileTime && name != metricQueueWait {
			continue
		}
		for _, m := range f.GetMetric() {
			var ours bool
			var result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "controller", "name": // "name" in the work queue's metrics
					ours = strings.Contains(l.GetValue(), kind)
				case "result":
					result = l.GetValue()
				}
			}
			switch {
			case !ours:
			case name == metricReconciles:
				c.add(result, int64(m.GetCounter().GetValue()))
			case name == metricReconcileTime:
				c.ReconcileSeconds += m.GetHistogram().GetSampleSum()
			default:
				c.QueueSeconds += m.GetHistogram().GetSampleSum()
				c.Dequeued += int64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return c, nil
}

// add counts n reconciles with the result label given.
func (c *Counts) add(result string, n int64) {
	c.Total += n
	switch result {
	case "requeue":
		c.Requeue += n
	case "requeue_after":
		c.RequeueAfter += n
	case "error":
		c.Errors += n
	}
}

// ReadCounts returns the counts written to path, in order; none if the
// file does not exist.
func ReadCounts(path string) ([]Counts, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Counts
	s := bufio.NewScanner(f)
	for s.Scan() {
		var c Counts
		var at int64
		if _, err := fmt.Sscan(s.Text(), &at, &c.Total, &c.Requeue, &c.RequeueAfter, &c.Errors, &c.ReconcileSeconds, &c.QueueSeconds, &c.Dequeued); err != nil {
			return nil, fmt.Errorf("reading %s: line %d: %w", path, len(out)+1, err)
		}
		c.At = time.Unix(0, at)
		out = append(out, c)
	}
	return out, s.Err()
}

// CountsAt returns the last of counts (in time order) read at or before t;
// zero counts if there is none.
func CountsAt(counts []Counts, t time.Time) Counts {
	var c Counts
	for _, x := range counts {
		if x.At.After(t) {
			break
		}
		c = x
	}
	c.At = t
	return c
}
