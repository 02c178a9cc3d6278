package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// The Go files the plugin writes, as templates.
//
//go:embed templates/*.go.tmpl
var goTemplates embed.FS

var templates = template.Must(template.ParseFS(goTemplates, "templates/*.go.tmpl"))

// fileData is what the Go templates see.
type fileData struct {
	*kind
	// Boilerplate is the project's license header (hack/boilerplate.go.txt)
	// followed by a blank line, or "".
	Boilerplate string
	// Package is the Go package of the file.
	Package string

	// Defaulting and Validation say which admission handlers to scaffold;
	// Paths say where gopf serves them.
	Defaulting, Validation bool
	Paths                  []string

	// For the webhook suite: the kinds of the package, the imports of
	// their Go types, and the CRD folder as filepath.Join arguments.
	Kinds   []*kind
	Imports []apiImport
	CRDPath string
}

// apiImport is an import of a group version's Go types.
type apiImport struct{ Alias, Path string }

// render executes the template of name and gofmts the result.
func render(name string, data fileData) (string, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return formatGo(name, buf.String())
}

// boilerplate turns the project's hack/boilerplate.go.txt into a license
// header as go/v4 writes it: YEAR replaced, followed by a blank line.
func boilerplate(text string, year int) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	return strings.ReplaceAll(text, "YEAR", strconv.Itoa(year)) + "\n\n"
}

// joinArgs renders path elements as filepath.Join arguments.
func joinArgs(elems []string) string {
	quoted := make([]string, len(elems))
	for i, e := range elems {
		quoted[i] = strconv.Quote(e)
	}
	return strings.Join(quoted, ", ")
}
