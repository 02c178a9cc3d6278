package scope

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// FuzzNamespacePatterns feeds newScope and CacheNamespaces any --namespace
// values (one per line of patterns) and asks the scope about any namespace.
// A pattern list either is refused or gives a scope that answers the same
// every time, keeps cluster-scoped objects, matches every pattern it
// accepted without an error, and, when the cache is limited to plain
// names, handles exactly the namespaces the cache holds.
//
// Crashers the fuzzer found are kept in testdata/fuzz/FuzzNamespacePatterns.
func FuzzNamespacePatterns(f *testing.F) {
	for _, seed := range []struct{ patterns, ns string }{
		{"app-*,!app-pr-*", "app-live"},
		{"app-*,!app-pr-*", "app-pr-1"},
		{"!kube-*", "kube-system"},
		{"a\nb", "b"},
		{"team-?\n!team-x\nteam-x", "team-x"},
		{"", "anything"},
		{" a , ,b ", "a"},
		{"!", "x"},
		{"!!a", "!a"},
		{"bad[", "bad["},
		{"[a-c]*,![!b]x", "bx"},
		{`a\*b`, "a*b"},
		{"*", ""},
	} {
		f.Add(seed.patterns, seed.ns)
	}
	f.Fuzz(func(t *testing.T, patterns, ns string) {
		list := strings.Split(patterns, "\n")
		s, err := New(list)
		cache, cacheErr := CacheNamespaces(list)
		if (err == nil) != (cacheErr == nil) {
			t.Fatalf("newScope(%q) says %v, CacheNamespaces %v", list, err, cacheErr)
		}
		if err != nil {
			if s != nil {
				t.Errorf("newScope(%q) returned a scope with its error %v", list, err)
			}
			return
		}
		in := s.Includes(ns)
		for range 3 {
			if s.Includes(ns) != in {
				t.Fatalf("%q: includes(%q) changes its answer", list, ns)
			}
		}
		if !s.Includes("") {
			t.Errorf("%q: cluster-scoped objects are out of scope", list)
		}
		if s != nil {
			for _, globs := range s.patterns {
				for _, p := range globs {
					if _, err := path.Match(strings.TrimPrefix(p, "!"), ns); err != nil {
						t.Errorf("%q: the accepted pattern %q fails on %q: %v", list, p, ns, err)
					}
				}
			}
		}
		if cache == nil {
			return
		}
		// A cache limited to plain names must hold exactly what is handled.
		for _, name := range cache {
			if !s.Includes(name) {
				t.Errorf("%q: the cache holds namespace %q, which is out of scope", list, name)
			}
		}
		if ns != "" && in != slices.Contains(cache, ns) {
			t.Errorf("%q: includes(%q) = %v, but the cache holds %q", list, ns, in, cache)
		}
	})
}
