//go:build linux

package bench

import (
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
)

// result turns the marks of a finished run, the operator's requests from
// the audit log, its handler calls and its resource usage into the run's
// figures. A phase lasts from its mark to the next one; startup begins when
// the process started, shutdown ends when it exited.
func (r *run) result(op Operator, ns string, used usage) (*RunResult, error) {
	handlerCalls, err := calls.Read(r.calls)
	if err != nil {
		return nil, err
	}
	rr := &RunResult{
		Operator:        op.Name,
		User:            r.user,
		Namespace:       ns,
		CPUSeconds:      used.cpu.Seconds(),
		PeakRSSKiB:      used.peakKiB,
		RusageMaxRSSKiB: used.rusageMaxRSS,
	}
	counts, err := r.readCounts()
	if err != nil {
		return nil, err
	}
	bounds := append([]mark{{phase: PhaseStartup, at: r.started, controlPlane: r.startedCP}}, r.marks...)
	requests := r.b.audit.of(r.user)
	for i, m := range bounds {
		p := PhaseResult{Name: m.phase}
		var end time.Time // zero: open-ended
		if i+1 < len(bounds) {
			next := bounds[i+1]
			end = next.at
			p.Seconds = end.Sub(m.at).Seconds()
			p.CPUSeconds = (next.cpu - m.cpu).Seconds()
			p.PeakRSSKiB = next.rss
			p.ControlPlaneCPUSeconds = (next.controlPlane - m.controlPlane).Seconds()
			rr.ControlPlaneCPUSeconds += p.ControlPlaneCPUSeconds
		} else {
			p.CPUSeconds = (used.cpu - m.cpu).Seconds()
			p.PeakRSSKiB = used.peakKiB
		}
		if d, ok := r.handled[m.phase]; ok {
			p.Seconds = d.Seconds()
		}
		p.count(requests, m.at, end)
		p.countCalls(handlerCalls, m.at, end)
		objects := len(r.track.names)
		if n, ok := r.objects[m.phase]; ok {
			objects = n
		}
		p.Objects = objects
		p.WritesPerObject = float64(p.Writes) / float64(objects)
		p.Reconciles = reconcilesBetween(counts, m.at, end)
		if isTicking(m.phase) {
			p.Lateness = percentiles(lateness(handlerCalls, r.sc.Interval, m.at, end))
		}
		if names, ok := r.arrivals[m.phase]; ok {
			created := map[string]time.Time{}
			for _, name := range names {
				created[name] = r.created[name]
			}
			p.FirstCall = percentiles(firstCallDelays(handlerCalls, causeCreate, created))
		}
		rr.Phases = append(rr.Phases, p)
	}
	return rr, nil
}

// readCounts reads the reconcile counts of each of the run's processes;
// nil when they were not counted.
func (r *run) readCounts() ([][]reconciles.Counts, error) {
	var out [][]reconciles.Counts
	for _, path := range r.countFiles {
		c, err := reconciles.ReadCounts(path)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// reconcilesBetween adds up the reconciles each process (its counts in
// time order) finished from from until to (zero: no end); nil without
// counts.
func reconcilesBetween(counts [][]reconciles.Counts, from, to time.Time) *ReconcileCounts {
	if counts == nil {
		return nil
	}
	if to.IsZero() {
		to = time.Unix(1<<40, 0) // after every reading
	}
	var out ReconcileCounts
	for _, c := range counts {
		d := reconciles.CountsAt(c, to).Minus(reconciles.CountsAt(c, from))
		out.Total += int(d.Total)
		out.Requeue += int(d.Requeue)
		out.RequeueAfter += int(d.RequeueAfter)
		out.Errors += int(d.Errors)
		out.ReconcileSeconds += d.ReconcileSeconds
		out.QueueSeconds += d.QueueSeconds
		out.Dequeued += int(d.Dequeued)
	}
	return &out
}

// causeCreate is the cause both operators record for a create handler
// call.
const causeCreate = "create"

// countCalls counts the handler calls made from from until (not including)
// to; a zero to means no end.
func (p *PhaseResult) countCalls(handlerCalls []calls.Call, from, to time.Time) {
	for _, c := range handlerCalls {
		if within(c.At, from, to) {
			p.HandlerCalls++
		}
	}
}

// count adds the requests received from from until (not including) to; a
// zero to means no end.
func (p *PhaseResult) count(requests []request, from, to time.Time) {
	p.Requests = map[string]int{}
	for _, q := range requests {
		if q.at.Before(from) || !to.IsZero() && !q.at.Before(to) {
			continue
		}
		p.Requests[q.verb+" "+q.resource]++
		if q.isWrite() {
			p.Writes++
		}
		if q.code >= 400 {
			p.Failed++
		}
	}
}
