package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// existingProjectDoc is the guide whose snippets the end-to-end test
// applies to a plain go/v4 project.
const existingProjectDoc = "docs/existing-project.md"

// docSnippets returns the code blocks of the Markdown file at path that a
// "<!-- docs-test: name -->" line introduces, by name.
func docSnippets(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const mark = "<!-- docs-test: "
	out := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		name, ok := strings.CutPrefix(lines[i], mark)
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, " -->")
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s: the snippet %q is not followed by a code block", path, name)
		}
		var b strings.Builder
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			b.WriteString(lines[i] + "\n")
		}
		out[name] = b.String()
	}
	return out
}

func TestTheExistingProjectGuideHasTheSnippetsItsTestApplies(t *testing.T) {
	got := docSnippets(t, filepath.Join(repoRoot(t), existingProjectDoc))
	for _, name := range []string{"handlers-file", "handlers-test", "main-imports", "main-setup"} {
		if strings.TrimSpace(got[name]) == "" {
			t.Errorf("%s has no snippet %q", existingProjectDoc, name)
		}
	}
}
