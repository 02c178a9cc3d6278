package scope

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Scope decides which namespaces the operator handles, as Kopf decides it,
// from patterns such as "app-*,!app-pr-*". Each pattern is a
// comma-separated list of globs (* and ?; a leading ! negates) read left to
// right: the first glob decides which namespaces are in play (a pattern
// that starts with a negation starts from "*"); a later negation drops the
// namespaces it matches, and a later plain glob brings back only those the
// first glob matched. A namespace is handled if any pattern accepts it.
// Namespaces that appear later are handled without a restart.
// Cluster-scoped objects are always in scope.
type Scope struct {
	patterns [][]string // the globs of each pattern, the first one plain
}

// newScope parses the patterns (each may hold a comma-separated list).
func New(patterns []string) (*Scope, error) {
	var out [][]string
	for _, p := range patterns {
		var globs []string
		for _, part := range strings.Split(p, ",") {
			part = strings.TrimSpace(part)
			if part == "" || part == "!" {
				continue
			}
			if _, err := path.Match(strings.TrimPrefix(part, "!"), ""); err != nil {
				return nil, fmt.Errorf("namespace pattern %q: %w", part, err)
			}
			globs = append(globs, part)
		}
		if len(globs) == 0 {
			continue
		}
		if strings.HasPrefix(globs[0], "!") {
			globs = append([]string{"*"}, globs...)
		}
		out = append(out, globs)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &Scope{patterns: out}, nil
}

// Includes reports whether objects of namespace ns are handled.
func (s *Scope) Includes(ns string) bool {
	if s == nil || ns == "" {
		return true
	}
	for _, globs := range s.patterns {
		if matchPattern(globs, ns) {
			return true
		}
	}
	return false
}

// matchPattern applies the globs of one pattern to ns, as Kopf does.
func matchPattern(globs []string, ns string) bool {
	first, _ := path.Match(globs[0], ns)
	in := first
	for _, g := range globs[1:] {
		if negated, ok := strings.CutPrefix(g, "!"); ok {
			if m, _ := path.Match(negated, ns); m {
				in = false
			}
		} else if m, _ := path.Match(g, ns); m && first {
			in = true
		}
	}
	return in
}

// Literal returns the namespaces in scope if every glob is a plain
// namespace name, so that a namespaced cache can serve the scope; nil
// otherwise. Only the first name of a pattern counts: a later plain name
// brings back only what the first one matched.
func (s *Scope) Literal() []string {
	if s == nil {
		return nil
	}
	var names []string
	for _, globs := range s.patterns {
		for _, g := range globs {
			// A backslash escapes in a glob: `a\b` handles "ab", not "a\b".
			if strings.ContainsAny(g, `*?[!\`) {
				return nil
			}
		}
		if !slices.Contains(names, globs[0]) {
			names = append(names, globs[0])
		}
	}
	return names
}

// CacheNamespaces returns the namespaces a manager's cache should be limited
// to for the namespace patterns of Options.Namespaces: the names themselves
// when they are all plain names, or nil (watch the whole cluster and filter)
// when there are globs or negations, so that namespaces created later are
// picked up without a restart.
func CacheNamespaces(patterns []string) ([]string, error) {
	s, err := New(patterns)
	if err != nil {
		return nil, err
	}
	return s.Literal(), nil
}
