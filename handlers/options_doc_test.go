package handlers_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// optionsPrefix starts the paragraph of an option interface's doc comment
// that lists the options it accepts.
const optionsPrefix = "Options:"

// What OnTimer (or any registration function) accepts is looked up in one
// place, the doc comment of its option interface; this keeps those lists
// true. The options an interface accepts are those of optionTable whose
// type implements it, and optionTable is checked against the source above.
func TestEachOptionInterfaceDocListsTheOptionsItAccepts(t *testing.T) {
	docs := interfaceDocs(t)
	for _, k := range optionKinds {
		var want []string
		for _, tc := range optionTable {
			if reflect.TypeOf(tc.value).Implements(k.iface) {
				want = append(want, tc.option)
			}
		}
		listed, ok := listedOptions(docs[k.iface.Name()])
		if !ok {
			t.Errorf("the doc of %s has no paragraph starting %q; want:\n%s %s.", k.iface.Name(), optionsPrefix, optionsPrefix, strings.Join(want, ", "))
			continue
		}
		if missing, extra := difference(want, listed), difference(listed, want); len(missing)+len(extra) > 0 {
			t.Errorf("the doc of %s lists %v, which %s does not accept, and misses %v; want:\n%s %s.",
				k.iface.Name(), extra, k.iface.Name(), missing, optionsPrefix, strings.Join(want, ", "))
		}
	}
}

// interfaceDocs returns the doc comments of the package's types by name.
func interfaceDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files := parsePackageFiles(t, fset)
	p, err := doc.NewFromFiles(fset, files, "github.com/gopf-dev/gopf/handlers")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, typ := range p.Types {
		docs[typ.Name] = typ.Doc
	}
	return docs
}

// listedOptions returns the names in the paragraph of text that starts
// with optionsPrefix: "Options: ID, WithParam, ..., Sharp."
func listedOptions(text string) ([]string, bool) {
	for _, para := range strings.Split(text, "\n\n") {
		if rest, ok := strings.CutPrefix(para, optionsPrefix); ok {
			rest = strings.TrimSuffix(strings.TrimSpace(rest), ".")
			return slices.DeleteFunc(strings.FieldsFunc(rest, func(r rune) bool {
				return r == ',' || r == ' ' || r == '\n'
			}), func(s string) bool { return s == "and" }), true
		}
	}
	return nil, false
}

// parsePackageFiles parses the package's Go files in the current folder,
// its tests left out, with their comments.
func parsePackageFiles(t *testing.T, fset *token.FileSet) []*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := make([]*ast.File, 0, len(names))
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
