package objects_test

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

	"github.com/gopf-dev/gopf/handlers/objects"
)

// helperOptions are the option interfaces of the helpers, by the name the
// table below uses.
var helperOptions = map[string]reflect.Type{
	"adopt":     reflect.TypeOf((*objects.AdoptOption)(nil)).Elem(),
	"label":     reflect.TypeOf((*objects.LabelOption)(nil)).Elem(),
	"naming":    reflect.TypeOf((*objects.NamingOption)(nil)).Elem(),
	"namespace": reflect.TypeOf((*objects.NamespaceOption)(nil)).Elem(),
	"ownerref":  reflect.TypeOf((*objects.OwnerReferenceOption)(nil)).Elem(),
	"append":    reflect.TypeOf((*objects.AppendOption)(nil)).Elem(),
}

// helperOptionTable has one value of every option constructor and the
// helpers that take it.
var helperOptionTable = []struct {
	option  string
	value   any
	helpers string
}{
	{"Forced", objects.Forced(), "adopt label naming namespace append"},
	{"Strict", objects.Strict(), "adopt naming"},
	{"Nested", objects.Nested("spec.template"), "adopt label"},
	{"NotController", objects.NotController(), "ownerref append"},
	{"NoBlockOwnerDeletion", objects.NoBlockOwnerDeletion(), "ownerref append"},
}

// An option implements the option interface of a helper exactly when it
// compiles as an argument of that helper.
func TestEachOptionCompilesOnlyForTheHelpersThatHonourIt(t *testing.T) {
	for _, tc := range helperOptionTable {
		takes := strings.Fields(tc.helpers)
		typ := reflect.TypeOf(tc.value)
		for name, iface := range helperOptions {
			if got, want := typ.Implements(iface), slices.Contains(takes, name); got != want {
				t.Errorf("%s (%s) implements %s: %v, want %v", tc.option, typ, iface, got, want)
			}
		}
	}
}

// The table above is only a check if it knows every option, and the doc of
// each option interface ("AdoptOption configures Adopt and AdoptAll:
// Forced, Strict, Nested.") lists exactly the options that implement it.
func TestTheOptionTableAndTheOptionDocsCoverEveryOption(t *testing.T) {
	fset := token.NewFileSet()
	files := parsePackageFiles(t, fset)
	p, err := doc.NewFromFiles(fset, files, "github.com/gopf-dev/gopf/handlers/objects")
	if err != nil {
		t.Fatal(err)
	}
	var constructors, tabled []string
	for _, typ := range p.Types {
		for _, f := range typ.Funcs {
			if strings.HasSuffix(typ.Name, "Setting") {
				constructors = append(constructors, f.Name)
			}
		}
		if iface, ok := helperOptionsByName()[typ.Name]; ok {
			checkListedOptions(t, typ.Name, typ.Doc, iface)
		}
	}
	for _, tc := range helperOptionTable {
		tabled = append(tabled, tc.option)
	}
	slices.Sort(constructors)
	slices.Sort(tabled)
	if !slices.Equal(constructors, tabled) {
		t.Errorf("option constructors in the source: %v; in the table: %v", constructors, tabled)
	}
}

func helperOptionsByName() map[string]reflect.Type {
	byName := map[string]reflect.Type{}
	for _, iface := range helperOptions {
		byName[iface.Name()] = iface
	}
	return byName
}

// checkListedOptions checks the options listed after the colon of an
// option interface's doc against those that implement it.
func checkListedOptions(t *testing.T, name, text string, iface reflect.Type) {
	t.Helper()
	_, list, _ := strings.Cut(strings.TrimSpace(text), ":")
	listed := strings.FieldsFunc(strings.TrimSuffix(list, "."), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\n'
	})
	var want []string
	for _, tc := range helperOptionTable {
		if reflect.TypeOf(tc.value).Implements(iface) {
			want = append(want, tc.option)
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("the doc of %s lists %v, want %v", name, listed, want)
	}
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
