package spec

import (
	"strings"
	"unicode/utf8"
)

// Truncate cuts s to at most n bytes without splitting a character, marking
// a cut with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func joinProblems(problems []string) string { return strings.Join(problems, "; ") }
