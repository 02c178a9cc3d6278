package robustness

// run is one run of an object's daemon or timer, as indices into all: from
// the event that began it to the event that ended it (EventDaemonStop,
// EventTimerEnd), or its process's kill or graceful stop, or len(all) if it
// ran to the end of the history.
type run struct {
	process, id int
	start, end  int
	ended       bool   // end is the run's own end event
	detail      string // that event's Detail: a daemon's stop reason
}

// runs returns the object's runs that begin is the first event of and
// finish the last, in the order they began.
func (o objectHistory) runs(begin, finish EventKind) []run {
	starts := o.filter(func(e Event) bool { return e.Kind == begin })
	out := make([]run, 0, len(starts))
	for _, i := range starts {
		r := run{process: o.all[i].Process, id: o.all[i].Run, start: i, end: len(o.all)}
		for k := i + 1; k < len(o.all); k++ {
			e := o.all[k]
			if e.Kind == finish && e.Run == r.id {
				r.end, r.ended, r.detail = k, true, e.Detail
				break
			}
			if (e.Kind == EventKill || e.Kind == EventStop) && e.Process == r.process {
				r.end = k
				break
			}
		}
		out = append(out, r)
	}
	return out
}

// checkOnce checks that no two of the object's runs (of its daemon, or of
// its timer: what names them) overlap, in one process or two.
func (o objectHistory) checkOnce(rule, what string, runs []run) []Violation {
	for k := 1; k < len(runs); k++ {
		for _, prev := range runs[:k] {
			if runs[k].start < prev.end {
				return []Violation{o.violation(rule, "%s %d began in process %d (event %d) while %s %d of process %d was under way (events %d to %d)",
					what, runs[k].id, runs[k].process, runs[k].start, what, prev.id, prev.process, prev.start, prev.end)}
			}
		}
	}
	return nil
}

// releaseWrite returns the index of the operator's write that let the
// object go (the last of its writes that landed, after the deletion that
// began at deleted), or -1 if the object was not let go.
func (o objectHistory) releaseWrite(deleted int) int {
	if !o.released() {
		return -1
	}
	writes := o.filter(func(e Event) bool {
		return e.Kind == EventLanded || e.Kind == EventLandedNoState || e.Kind == EventLost || e.Kind == EventLostResults
	})
	if len(writes) == 0 || writes[len(writes)-1] < deleted {
		return -1
	}
	return writes[len(writes)-1]
}
