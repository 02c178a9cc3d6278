package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// timerLateness measures how late timers start compared with when they were
// due: the cost of scheduling many timers on a bounded pool of workers.
var timerLateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "gopf_timer_lateness_seconds",
	Help:    "How long after its due time a timer started running.",
	Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
}, []string{"controller", "handler"})

func init() {
	metrics.Registry.MustRegister(timerLateness)
}
