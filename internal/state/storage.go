package state

import "github.com/gopf-dev/gopf/internal/spec"

// Storage reads and writes the state kept on objects of one kind.
type Storage interface {
	// Load returns the stored state, nil if there is none, or an error
	// describing state that is there but cannot be read.
	Load(obj map[string]any) (*State, error)
	// Save adds to p what turns the state stored on obj (the object as
	// read, whether that state is readable or not) into st.
	Save(p *spec.Patch, obj map[string]any, st *State) error
	// Where names the place, for messages.
	Where() string
	// InStatus reports whether save writes the state in status, where the
	// API server keeps only what the kind's status schema declares: the
	// status patch carries it, and its response shows whether it stayed.
	InStatus() bool
	// Places lists the places the storage reads state from, in the order
	// it reads them: itself, or for gopf's layered storage its layers.
	Places() []Storage
}

// Purgeable is a storage that can also remove what it holds, readable or
// not: gopf's other place, once the state has moved out of it.
type Purgeable interface {
	Storage
	Purge(p *spec.Patch, obj map[string]any)
}

// Saved reports whether obj carries st in s.
func Saved(s Storage, obj map[string]any, st *State) bool {
	got, err := s.Load(obj)
	return err == nil && SameState(got, st)
}

// LoadAll returns the state of the first of the storage's places that
// holds readable state, and the error of the first unreadable place before
// or after it: state that cannot be read is reported even when another
// place's is used.
func LoadAll(s Storage, obj map[string]any) (*State, error) {
	var bad error
	for _, place := range s.Places() {
		st, err := place.Load(obj)
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
