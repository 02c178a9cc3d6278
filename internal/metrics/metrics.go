package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TimerLateness measures how late timers start compared with when they were
// due: the cost of scheduling many timers on a bounded pool of workers.
var TimerLateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "gopf_timer_lateness_seconds",
	Help:    "How long after its due time a timer started running.",
	Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
}, []string{"controller", "handler"})

// PeeringState is 1 while the operator is paused by peering, else 0.
var PeeringState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "gopf_peering_paused",
	Help: "1 while the operator is paused by a peer with a higher or equal priority.",
}, []string{"peering"})

// HandlerCalls counts handler calls by outcome: success, retry or failure.
var HandlerCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gopf_handler_calls_total",
	Help: "Handler calls, by outcome (success, retry, failure).",
}, []string{"controller", "handler", "outcome"})

// HandlerDuration measures how long handler calls take.
var HandlerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "gopf_handler_duration_seconds",
	Help:    "How long handler calls take.",
	Buckets: prometheus.DefBuckets,
}, []string{"controller", "handler"})

// Causes counts the causes detected, by reason.
var Causes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gopf_causes_total",
	Help: "Causes detected on objects, by reason (create, update, delete, resume).",
}, []string{"controller", "cause"})

// SpawnedRunning counts the running daemons.
var SpawnedRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "gopf_daemons_running",
	Help: "Daemons currently running (kind is always daemon).",
}, []string{"controller", "kind"})

// ShardInfo is 1, labelled with the ring and the shard, in a replica that
// is a shard of a ring (reconcile.Options.Sharding); absent otherwise. An
// info metric rather than a shard label on every series: the shard is a
// property of the process, like its version, and Prometheus joins it onto
// any series of the same target (on the instance or pod label), including
// controller-runtime's and client-go's, which gopf does not define.
var ShardInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "gopf_shard_info",
	Help: "1 in a replica that is a shard of a ring, labelled with the ring and the shard.",
}, []string{"ring", "shard"})

func init() {
	crmetrics.Registry.MustRegister(TimerLateness, PeeringState, HandlerCalls, HandlerDuration, Causes, SpawnedRunning, ShardInfo)
}
