package scaffold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// tidy runs "go mod tidy" on the project as this request leaves it and
// writes the go.mod and go.sum it gives. kubebuilder's go/v4 tidies after
// init, but nothing does after edit, and a go.mod that requires gopf
// without gopf's own requirements fails every go command ("updates to go.mod
// needed").
//
// The go command runs in a temporary copy of the project's go.mod, go.sum
// and Go files (the only files tidy reads), with relative replace
// directives pointed at the project's folder for the run and restored in
// the result. When tidy cannot run or fails, the edit still stands and a
// note tells the user to run it.
func (s *session) tidy() {
	if err := s.tidyInCopy(); err != nil {
		s.note("go.mod: %s; run \"go mod tidy\" in the project before building it", err)
	}
}

// tidyInCopy tidies a temporary copy of the project and writes the go.mod
// and go.sum it gives.
func (s *session) tidyInCopy() error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return errors.New("there is no go command on PATH to tidy it")
	}
	dir, err := os.MkdirTemp("", "gopf-tidy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := s.copyForTidy(dir); err != nil {
		return err
	}
	gocmd := goCommand(goBin, dir)
	relative, err := s.absoluteReplaces(gocmd)
	if err != nil {
		return err
	}
	if _, err := gocmd("mod", "tidy"); err != nil {
		return err
	}
	for old, target := range relative {
		if _, err := gocmd("mod", "edit", "-replace="+old+"="+target); err != nil {
			return err
		}
	}
	for _, p := range []string{goModPath, goSumPath} {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return err
		}
		s.write(p, string(data))
	}
	return nil
}

// copyForTidy writes the files tidy reads, the project's go.mod, go.sum
// and Go files as this request leaves them, into dir.
func (s *session) copyForTidy(dir string) error {
	for p := range s.req.Universe {
		if p != goModPath && p != goSumPath && !isProjectGoFile(p) {
			continue
		}
		content, _ := s.file(p)
		file := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// goCommand returns a function that runs the go command goBin in dir,
// outside any workspace and free to update go.mod, and returns its output;
// its error carries what the command wrote to stderr.
func goCommand(goBin, dir string) func(args ...string) ([]byte, error) {
	return func(args ...string) ([]byte, error) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
}

// absoluteReplaces points the relative replace directives of the go.mod in
// the go command's folder at the project's folder, returning what they
// were: module[@version] → relative path.
func (s *session) absoluteReplaces(gocmd func(...string) ([]byte, error)) (map[string]string, error) {
	out, err := gocmd("mod", "edit", "-json")
	if err != nil {
		return nil, err
	}
	var mod struct {
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("reading go mod edit -json: %w", err)
	}
	relative := map[string]string{}
	for _, r := range mod.Replace {
		if r.New.Version != "" || !(strings.HasPrefix(r.New.Path, "./") || strings.HasPrefix(r.New.Path, "../") || r.New.Path == "." || r.New.Path == "..") {
			continue
		}
		old := r.Old.Path
		if r.Old.Version != "" {
			old += "@" + r.Old.Version
		}
		relative[old] = r.New.Path
		abs := filepath.Join(s.opts.Dir, filepath.FromSlash(r.New.Path))
		if _, err := gocmd("mod", "edit", "-replace="+old+"="+abs); err != nil {
			return nil, err
		}
	}
	return relative, nil
}

// isProjectGoFile reports whether p is a Go file of the project's own
// packages: not a tool's binary folder, vendored code or test data.
func isProjectGoFile(p string) bool {
	if !strings.HasSuffix(p, ".go") {
		return false
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "bin" || dir == "vendor" || dir == "testdata" || strings.HasPrefix(dir, ".") && dir != "." {
			return false
		}
	}
	return true
}
