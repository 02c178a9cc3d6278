package gopf_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// maxPackageLines is the most lines (blank and comment lines included, as
// wc -l counts them) the non-test files of a library package may have: about
// what one reader holds in mind at once. A package that grows past it has
// become two concepts and is split into packages with one job each, as the
// engine's storage, memory and timers were.
const maxPackageLines = 2500

// unsizedDirs hold code that is not a library package a user imports or a
// maintainer reads as one concept: programs and their test suites (cmd/,
// examples/, hack/, test/), API types that are mostly declarations and
// generated code (api/), and tools the Makefile builds (bin/).
var unsizedDirs = []string{"api/", "bin/", "cmd/", "examples/", "hack/", "test/"}

func TestEveryLibraryPackageFitsInOneReading(t *testing.T) {
	sizes, err := packageLines(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) < 10 {
		t.Fatalf("counted %d library packages (%v), want the whole module's", len(sizes), sizes)
	}
	for _, v := range oversized(sizes) {
		t.Error(v)
	}
}

func TestThePackageSizeTestCatchesALargePackage(t *testing.T) {
	long := strings.Repeat("// line\n", maxPackageLines)
	fsys := fstest.MapFS{
		"big/a.go":                       {Data: []byte("package big\n" + long[:len(long)/2])},
		"big/b.go":                       {Data: []byte("package big\n" + long[:len(long)/2])},
		"big/b_test.go":                  {Data: []byte(long)},
		"small/a.go":                     {Data: []byte("package small\n" + long[:len(long)/2])},
		"small/zz_generated.deepcopy.go": {Data: []byte(long)},
		"small/testdata/x.go":            {Data: []byte(long)},
		"cmd/tool/main.go":               {Data: []byte(long + long)},
	}
	sizes, err := packageLines(fsys)
	if err != nil {
		t.Fatal(err)
	}
	got := oversized(sizes)
	if len(got) != 1 || !strings.Contains(got[0], `"big" has 2502 lines`) {
		t.Fatalf("oversized(%v) = %q, want exactly big's 2502 lines (tests, generated code, testdata and programs not counted)", sizes, got)
	}
}

// packageLines returns the lines of each library package's non-test Go
// files under fsys, by directory. Generated files (zz_generated.*) follow
// their generator and are not counted; testdata and hidden directories hold
// no package.
func packageLines(fsys fs.FS) (map[string]int, error) {
	sizes := map[string]int{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || isUnsized(p+"/")) {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sizes[path.Dir(p)] += bytes.Count(data, []byte("\n"))
		return nil
	})
	return sizes, err
}

// oversized reports the packages of sizes over maxPackageLines, in order.
func oversized(sizes map[string]int) []string {
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(sizes)) {
		if sizes[dir] > maxPackageLines {
			out = append(out, fmt.Sprintf("package %q has %d lines, more than %d: split it into packages with one job each", dir, sizes[dir], maxPackageLines))
		}
	}
	return out
}

func isUnsized(dir string) bool {
	return slices.ContainsFunc(unsizedDirs, func(u string) bool { return strings.HasPrefix(dir, u) })
}
