package scaffold

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Where a project's go.mod and go.sum are, in the universe and on disk.
const (
	goModPath = "go.mod"
	goSumPath = "go.sum"
)

// GopfModule is the module path of gopf.
const GopfModule = "github.com/gopf-dev/gopf"

// PlaceholderVersion is the version go.mod requires gopf at when only a
// replace directive says where gopf comes from: the zero pseudo-version, as
// the go command writes for replaced modules.
const PlaceholderVersion = "v0.0.0-00010101000000-000000000000"

var semverPattern = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+incompatible)?$`)

// validVersion reports whether v can stand in a go.mod require directive.
func validVersion(v string) bool { return semverPattern.MatchString(v) }

// goModDirective finds the directive of verb ("require" or "replace") for
// gopf in a go.mod file, in a one-line directive or in a block, and returns
// its line index, or -1.
func goModDirective(lines []string, verb string) int {
	inBlock := false
	for i, line := range lines {
		t := strings.TrimSpace(stripComment(line))
		switch {
		case inBlock && t == ")":
			inBlock = false
		case !inBlock && (t == verb+" (" || t == verb+"("):
			inBlock = true
		case inBlock && modulePathIs(t, GopfModule):
			return i
		case !inBlock && strings.HasPrefix(t, verb+" ") && modulePathIs(strings.TrimSpace(strings.TrimPrefix(t, verb)), GopfModule):
			return i
		}
	}
	return -1
}

// modulePathIs reports whether a directive's arguments start with module.
func modulePathIs(args, module string) bool {
	f := strings.Fields(args)
	return len(f) > 0 && strings.Trim(f[0], `"`) == module
}

func stripComment(line string) string {
	if i := strings.Index(line, "//"); i >= 0 {
		return line[:i]
	}
	return line
}

// requiredGopf returns the version of gopf that go.mod requires, or "".
func requiredGopf(gomod string) string {
	lines := strings.Split(gomod, "\n")
	i := goModDirective(lines, "require")
	if i < 0 {
		return ""
	}
	f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(stripComment(lines[i])), "require"))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// replacedGopf returns where go.mod's replace directive for gopf points,
// or "".
func replacedGopf(gomod string) string {
	lines := strings.Split(gomod, "\n")
	i := goModDirective(lines, "replace")
	if i < 0 {
		return ""
	}
	_, target, ok := strings.Cut(stripComment(lines[i]), "=>")
	if !ok {
		return ""
	}
	return strings.TrimSpace(target)
}

// setGopfRequire makes go.mod require gopf at version, replacing an
// existing requirement. A new requirement is added as a directive of its
// own after the module's other requirements; `go mod tidy` merges it.
func setGopfRequire(gomod, version string) string {
	lines := strings.Split(gomod, "\n")
	directive := "require " + GopfModule + " " + version
	if i := goModDirective(lines, "require"); i >= 0 {
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "require") {
			lines[i] = indent + directive
		} else {
			lines[i] = indent + GopfModule + " " + version
		}
		return strings.Join(lines, "\n")
	}
	return appendDirective(gomod, directive)
}

// setGopfReplace makes go.mod replace gopf with the module in the folder
// dir, replacing an existing replacement.
func setGopfReplace(gomod, dir string) string {
	lines := strings.Split(gomod, "\n")
	target := quoteModPath(dir)
	if i := goModDirective(lines, "replace"); i >= 0 {
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "replace") {
			lines[i] = indent + "replace " + GopfModule + " => " + target
		} else {
			lines[i] = indent + GopfModule + " => " + target
		}
		return strings.Join(lines, "\n")
	}
	return appendDirective(gomod, "replace "+GopfModule+" => "+target)
}

// appendDirective adds a directive at the end of a go.mod file, after a
// blank line.
func appendDirective(gomod, directive string) string {
	return strings.TrimRight(gomod, "\n") + "\n\n" + directive + "\n"
}

// quoteModPath quotes a path for go.mod when it needs quotes.
func quoteModPath(p string) string {
	if strings.ContainsAny(p, " \t\"'`\\") {
		return strconv.Quote(p)
	}
	return p
}

// localReplacePath turns a folder given by the user into a replace target:
// go.mod reads a path as a folder only when it is absolute or starts with
// ./ or ../.
func localReplacePath(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("empty path")
	}
	if strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../") ||
		dir == "." || dir == ".." || (len(dir) > 2 && dir[1] == ':') {
		return dir, nil
	}
	return "./" + dir, nil
}
