package kopfstate

import "github.com/gopf-dev/gopf/internal/state"

// handledFits reports whether the records of st can say which essence
// their handlers finished on (kopfRecord.Handled) without taking the
// object's annotations over Kubernetes' limit: each such record holds a
// copy of an essence, beside the last-handled one. It counts the
// annotations the object has, gopf's state as it was included, so it errs
// on the side of leaving the essences out; the records are then Kopf's
// own, and a change made while the cause is unfinished is taken into the
// cause, as Kopf takes it.
func handledFits(obj map[string]any, st *state.State) bool {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	size := len(st.Essence)
	for k, v := range annotations {
		text, _ := v.(string)
		size += len(k) + len(text)
	}
	for _, rec := range st.Progress {
		if rec.Finished() && rec.Handled != "" {
			quoted, _ := state.Marshal(rec.Handled) // as it is written, in a record's JSON
			size += len(`,"handled":`) + len(quoted)
		}
	}
	return size <= state.MaxAnnotationsSize
}
