//go:build linux

package bench

import (
	"math"
	"sort"
)

// medianRun combines the rounds of one operator into one run whose every
// figure (per phase: time, CPU, the control plane's CPU, RSS, writes,
// handler calls, reconciles, each request count; in total: CPU, the control plane's
// CPU and RSS) is the median over the rounds. Round is 0.
func medianRun(runs []RunResult) RunResult {
	if len(runs) == 0 {
		return RunResult{}
	}
	m := RunResult{Operator: runs[0].Operator}
	m.CPUSeconds = median(runs, func(r *RunResult) float64 { return r.CPUSeconds })
	m.ControlPlaneCPUSeconds = median(runs, func(r *RunResult) float64 { return r.ControlPlaneCPUSeconds })
	m.PeakRSSKiB = int64(math.Round(median(runs, func(r *RunResult) float64 { return float64(r.PeakRSSKiB) })))
	m.RusageMaxRSSKiB = int64(math.Round(median(runs, func(r *RunResult) float64 { return float64(r.RusageMaxRSSKiB) })))
	for _, p := range runs[0].Phases {
		name := p.Name
		phase := func(f func(*PhaseResult) float64) float64 {
			return median(runs, func(r *RunResult) float64 {
				if rp := r.Phase(name); rp != nil {
					return f(rp)
				}
				return 0
			})
		}
		mp := PhaseResult{Name: name, Requests: map[string]int{}}
		mp.Seconds = phase(func(p *PhaseResult) float64 { return p.Seconds })
		mp.CPUSeconds = phase(func(p *PhaseResult) float64 { return p.CPUSeconds })
		mp.ControlPlaneCPUSeconds = phase(func(p *PhaseResult) float64 { return p.ControlPlaneCPUSeconds })
		mp.PeakRSSKiB = int64(math.Round(phase(func(p *PhaseResult) float64 { return float64(p.PeakRSSKiB) })))
		mp.WritesPerObject = phase(func(p *PhaseResult) float64 { return p.WritesPerObject })
		mp.Writes = int(math.Round(phase(func(p *PhaseResult) float64 { return float64(p.Writes) })))
		mp.Failed = int(math.Round(phase(func(p *PhaseResult) float64 { return float64(p.Failed) })))
		mp.HandlerCalls = int(math.Round(phase(func(p *PhaseResult) float64 { return float64(p.HandlerCalls) })))
		mp.Objects = int(math.Round(phase(func(p *PhaseResult) float64 { return float64(p.Objects) })))
		mp.Reconciles = medianReconciles(runs, name)
		mp.Lateness = medianPercentiles(runs, name, func(p *PhaseResult) *Percentiles { return p.Lateness })
		mp.FirstCall = medianPercentiles(runs, name, func(p *PhaseResult) *Percentiles { return p.FirstCall })
		keys := map[string]bool{}
		for i := range runs {
			if rp := runs[i].Phase(name); rp != nil {
				for k := range rp.Requests {
					keys[k] = true
				}
			}
		}
		for k := range keys {
			if n := int(math.Round(phase(func(p *PhaseResult) float64 { return float64(p.Requests[k]) }))); n > 0 {
				mp.Requests[k] = n
			}
		}
		m.Phases = append(m.Phases, mp)
	}
	return m
}

// median returns the median of f over runs (the mean of the middle two for
// an even count).
func median(runs []RunResult, f func(*RunResult) float64) float64 {
	vs := make([]float64, len(runs))
	for i := range runs {
		vs[i] = f(&runs[i])
	}
	sort.Float64s(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// medianPercentiles returns the median of every figure of the percentiles
// f picks from the named phase, over the runs that have them; nil when none
// has.
func medianPercentiles(runs []RunResult, phase string, f func(*PhaseResult) *Percentiles) *Percentiles {
	var with []RunResult
	for i := range runs {
		if p := runs[i].Phase(phase); p != nil && f(p) != nil {
			with = append(with, runs[i])
		}
	}
	if len(with) == 0 {
		return nil
	}
	of := func(g func(*Percentiles) float64) float64 {
		return median(with, func(r *RunResult) float64 { return g(f(r.Phase(phase))) })
	}
	return &Percentiles{
		N:   int(math.Round(of(func(p *Percentiles) float64 { return float64(p.N) }))),
		P50: of(func(p *Percentiles) float64 { return p.P50 }),
		P99: of(func(p *Percentiles) float64 { return p.P99 }),
		Max: of(func(p *Percentiles) float64 { return p.Max }),
	}
}

// medianReconciles returns the median of every reconcile count of the
// named phase, over the runs that counted them; nil when none did.
func medianReconciles(runs []RunResult, phase string) *ReconcileCounts {
	var with []RunResult
	for i := range runs {
		if p := runs[i].Phase(phase); p != nil && p.Reconciles != nil {
			with = append(with, runs[i])
		}
	}
	if len(with) == 0 {
		return nil
	}
	of := func(f func(*ReconcileCounts) int) int {
		return int(math.Round(median(with, func(r *RunResult) float64 { return float64(f(r.Phase(phase).Reconciles)) })))
	}
	seconds := func(f func(*ReconcileCounts) float64) float64 {
		return median(with, func(r *RunResult) float64 { return f(r.Phase(phase).Reconciles) })
	}
	return &ReconcileCounts{
		Total:            of(func(c *ReconcileCounts) int { return c.Total }),
		Requeue:          of(func(c *ReconcileCounts) int { return c.Requeue }),
		RequeueAfter:     of(func(c *ReconcileCounts) int { return c.RequeueAfter }),
		Errors:           of(func(c *ReconcileCounts) int { return c.Errors }),
		ReconcileSeconds: seconds(func(c *ReconcileCounts) float64 { return c.ReconcileSeconds }),
		QueueSeconds:     seconds(func(c *ReconcileCounts) float64 { return c.QueueSeconds }),
		Dequeued:         of(func(c *ReconcileCounts) int { return c.Dequeued }),
	}
}
