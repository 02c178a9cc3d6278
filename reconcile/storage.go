package reconcile

import "github.com/gopf-dev/gopf/internal/spec"

// storage reads and writes the state kept on objects of one kind.
type storage interface {
	// load returns the stored state, nil if there is none, or an error
	// describing state that is there but cannot be read.
	load(obj map[string]any) (*state, error)
	// save adds to p what turns the state stored on obj (the object as
	// read, whether that state is readable or not) into st.
	save(p *spec.Patch, obj map[string]any, st *state) error
	// where names the place, for messages.
	where() string
	// inStatus reports whether save writes the state in status, where the
	// API server keeps only what the kind's status schema declares: the
	// status patch carries it, and its response shows whether it stayed.
	inStatus() bool
	// places lists the places the storage reads state from, in the order
	// it reads them: itself, or for gopf's layered storage its layers.
	places() []storage
}

// purgeable is a storage that can also remove what it holds, readable or
// not: gopf's other place, once the state has moved out of it.
type purgeable interface {
	storage
	purge(p *spec.Patch, obj map[string]any)
}

// saved reports whether obj carries st in s.
func saved(s storage, obj map[string]any, st *state) bool {
	got, err := s.load(obj)
	return err == nil && sameState(got, st)
}

// kopfFallback is gopf's own storage, which reads every place gopf may
// have written as well as Kopf's state: storage, where this operator keeps
// the state; other, gopf's other place (annotations or status), where an
// older gopf or another configuration may have kept it; then Kopf's, for
// objects an operator takes over from Kopf. The first place that holds
// readable state wins. Once gopf stores the state, the copies elsewhere go
// (see save): objects move one by one, as gopf handles them.
type kopfFallback struct {
	storage
	other purgeable
	kopf  *kopfStore
}

// load returns the state of the first place that holds readable state. If
// none does, it returns the first place's error, if any place was
// unreadable.
func (s kopfFallback) load(obj map[string]any) (*state, error) {
	st, bad := loadAll(s, obj)
	if st != nil {
		return st, nil
	}
	return nil, bad
}

// places are gopf's place, its other place and Kopf's, those there are.
func (s kopfFallback) places() []storage {
	out := []storage{s.storage}
	if s.other != nil {
		out = append(out, s.other)
	}
	if s.kopf != nil {
		out = append(out, s.kopf)
	}
	return out
}

// loadAll returns the state of the first of the storage's places that
// holds readable state, and the error of the first unreadable place before
// or after it: state that cannot be read is reported even when another
// place's is used.
func loadAll(s storage, obj map[string]any) (*state, error) {
	var bad error
	for _, place := range s.places() {
		st, err := place.load(obj)
		if err != nil {
			if bad == nil {
				bad = err
			}
			continue
		}
		if st != nil {
			return st, bad
		}
	}
	return nil, bad
}

// save stores st in storage and removes the copies elsewhere: Kopf's, and
// the one in gopf's other place. A copy in annotations goes in the same
// write (the object patch, sent after the status patch). A copy in status
// goes once storage holds a state: the status patch is sent first, so that
// removing it in the write that moves the state could lose the state if
// the object patch then failed.
func (s kopfFallback) save(p *spec.Patch, obj map[string]any, st *state) error {
	if err := s.storage.save(p, obj, st); err != nil {
		return err
	}
	switch {
	case s.other == nil:
	case !s.other.inStatus():
		s.other.purge(p, obj)
	default:
		if held, err := s.storage.load(obj); held != nil || err != nil {
			s.other.purge(p, obj)
		}
	}
	s.kopf.purge(p, obj)
	return nil
}
