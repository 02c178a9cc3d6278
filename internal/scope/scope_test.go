package scope

import (
	"slices"
	"testing"
)

func TestNamespacePatternsAreDecidedAsKopfDecidesThem(t *testing.T) {
	cases := []struct {
		patterns []string
		in, out  []string
	}{
		{[]string{"app-*,!app-pr-*"}, []string{"app-live", "app-x"}, []string{"app-pr-1", "other"}},
		{[]string{"!kube-*"}, []string{"default", "app"}, []string{"kube-system"}},
		{[]string{"a", "b"}, []string{"a", "b"}, []string{"c"}},
		// Kopf's own examples: the first glob decides what is in play.
		{[]string{"myapp-*, !*-pr-*, *pr-123"}, []string{"myapp-test", "myapp-pr-123"}, []string{"myapp-pr-456", "otherapp-pr-123"}},
		{[]string{"!*-pr-*, *pr-123"}, []string{"myapp-test", "otherapp-pr-123", "anyapp-anything"}, []string{"myapp-pr-456"}},
		// Several patterns are or-ed: the second alone means "all but app-pr-*".
		{[]string{"app-*", "!app-pr-*"}, []string{"app-x", "other", "app-pr-1"}, nil},
		// Within one pattern, a later plain name brings back only what the
		// first one matched.
		{[]string{"a,b"}, []string{"a"}, []string{"b"}},
		{[]string{"team-?,!team-x,team-x"}, []string{"team-x", "team-a"}, []string{"team-ab"}},
		{nil, []string{"anything"}, nil},
	}
	for _, tc := range cases {
		s, err := New(tc.patterns)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range tc.in {
			if !s.Includes(ns) {
				t.Errorf("%q: %q should be in scope", tc.patterns, ns)
			}
		}
		for _, ns := range tc.out {
			if s.Includes(ns) {
				t.Errorf("%q: %q should be out of scope", tc.patterns, ns)
			}
		}
		if !s.Includes("") {
			t.Errorf("%q: cluster-scoped objects are always in scope", tc.patterns)
		}
	}
	if _, err := New([]string{"bad["}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

func TestCacheNamespacesOnlyForPlainNames(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a,b"}, []string{"a"}}, // b is never in scope
		{[]string{"a", "a"}, []string{"a"}},
		{[]string{"a,b*"}, nil},
		{[]string{"!a"}, nil},
		{[]string{""}, nil},
	} {
		got, err := CacheNamespaces(tc.patterns)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("CacheNamespaces(%q) = %q, %v; want %q", tc.patterns, got, err, tc.want)
		}
	}
}
