package scaffold

import (
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"strconv"
	"strings"
)

// Markers in cmd/main.go. Kubebuilder's go/v4 inserts code before its own
// markers; gopf's mark where gopf inserts the registration of each kind's
// handlers and admission handlers.
const (
	markerImports  = "// +kubebuilder:scaffold:imports"
	markerBuilder  = "// +kubebuilder:scaffold:builder"
	markerHandlers = "// +gopf:scaffold:handlers"
	markerWebhooks = "// +gopf:scaffold:webhooks"
)

// mainPath is the file kubebuilder's go/v4 scaffolds the manager in.
const mainPath = "cmd/main.go"

// gopfSetupBlock goes before go/v4's builder marker, where the manager
// exists: it builds the registry and sets gopf up on the manager.
const gopfSetupBlock = `// gopf: the handlers added in registerHandlers and registerWebhooks (at
// the end of this file) run on this manager, next to any Reconcilers set
// up here. ENABLE_WEBHOOKS=false leaves the admission handlers out, e.g. for
// "make run" without webhook certificates.
gopfRegistry := handlers.NewRegistry()
registerHandlers(gopfRegistry)
if os.Getenv("ENABLE_WEBHOOKS") != "false" {
	registerWebhooks(gopfRegistry)
}
// SetupWithManager sets up both the handlers and the admission handlers.
if err := gopf.SetupWithManager(mgr, gopfRegistry); err != nil {
	setupLog.Error(err, "Failed to set up the gopf handlers")
	os.Exit(1)
}
`

// gopfRegisterFuncs go at the end of cmd/main.go.
const gopfRegisterFuncs = `
// registerHandlers adds the gopf handlers of the operator to reg: one call
// per kind, added by "kubebuilder create api". Handlers of *unstructured.Unstructured
// objects need the manager's client to cache unstructured objects
// (ctrl.Options.Client.Cache.Unstructured).
func registerHandlers(reg *handlers.Registry) {
	` + markerHandlers + `
}

// registerWebhooks adds the admission handlers (handlers.OnValidate and
// handlers.OnMutate) of the operator to reg: one call per kind, added by
// "kubebuilder create webhook". gopf serves them on the manager's webhook
// server at the paths config/webhook names.
func registerWebhooks(reg *handlers.Registry) {
	` + markerWebhooks + `
}
`

// hasGopf reports whether cmd/main.go is already wired to gopf.
func hasGopf(src string) bool { return strings.Contains(src, markerHandlers) }

// addGopf wires gopf into a kubebuilder main.go: it imports gopf, creates a
// registry and sets it up on the manager before go/v4's builder marker, and
// adds registerHandlers and registerWebhooks with gopf's markers. The
// user's flags and manager options stay as they are. module is the
// project's module path: gopf's imports go in a group of their own after
// the third-party ones and before the project's own.
//
// A main.go wired by an earlier version of the plugin, which also called
// gopf's webhook.Setup after SetupWithManager (registering every admission
// handler twice), loses that second call.
func addGopf(src, module string) (string, error) {
	if hasGopf(src) {
		return removeDuplicateWebhookSetup(src)
	}
	for _, m := range []string{markerImports, markerBuilder} {
		if markerLine(src, m) < 0 {
			return "", fmt.Errorf("%s has no %q marker: it does not look like kubebuilder's go/v4 main.go. "+
				"Add gopf by hand: build a registry with handlers.NewRegistry(), register handlers, and call "+
				"gopf.SetupWithManager(mgr, registry) after the manager is created", mainPath, m)
		}
	}
	if !strings.Contains(src, "setupLog") || !strings.Contains(src, "mgr") {
		return "", fmt.Errorf("%s has no manager variable mgr or logger setupLog, which gopf's setup code uses. "+
			"Add gopf by hand: call gopf.SetupWithManager(<your manager>, registry) after the manager is created", mainPath)
	}
	src, name, err := ensureImport(src, "os", "")
	if err != nil {
		return "", err
	}
	if name != "os" {
		return "", fmt.Errorf("%s imports os as %s; gopf's setup code needs it as os", mainPath, name)
	}
	if src, err = addImportGroup(src, module, GopfModule, GopfModule+"/handlers"); err != nil {
		return "", err
	}
	src, err = insertBefore(src, markerBuilder, gopfSetupBlock)
	if err != nil {
		return "", err
	}
	src = strings.TrimRight(src, "\n") + "\n" + gopfRegisterFuncs
	return formatGo(mainPath, src)
}

// addImportGroup imports the packages (by their own names) that src does
// not import yet, as a group of their own: before the first import of the
// project's module, else at the end of the import block, separated from
// go/v4's imports marker by a blank line so that the project's imports
// go/v4 adds later form a group after it. It fails when src imports one of
// the packages under another name.
func addImportGroup(src, module string, paths ...string) (string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, mainPath, src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", mainPath, err)
	}
	imported := map[string]string{}
	firstOwn := 0 // 1-based line of the first import of the project, 0 if none
	for _, spec := range file.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		name := path.Base(p)
		if spec.Name != nil {
			name = spec.Name.Name
		}
		imported[p] = name
		if firstOwn == 0 && module != "" && (p == module || strings.HasPrefix(p, module+"/")) {
			pos := spec.Pos()
			if spec.Doc != nil {
				pos = spec.Doc.Pos()
			}
			firstOwn = fset.Position(pos).Line
		}
	}
	var group []string
	for _, p := range paths {
		name, ok := imported[p]
		switch {
		case !ok:
			group = append(group, strconv.Quote(p))
		case name != path.Base(p):
			return "", fmt.Errorf("%s imports %s as %s; gopf's setup code needs it as %s", mainPath, p, name, path.Base(p))
		}
	}
	if len(group) == 0 {
		return src, nil
	}
	lines := strings.Split(src, "\n")
	at := firstOwn - 1
	if firstOwn == 0 {
		if at = markerLine(src, markerImports); at < 0 {
			return "", fmt.Errorf("%s has no %q marker", mainPath, markerImports)
		}
	}
	indent := lines[at][:len(lines[at])-len(strings.TrimLeft(lines[at], " \t"))]
	var add []string
	if at > 0 && strings.TrimSpace(lines[at-1]) != "" && !strings.HasSuffix(strings.TrimSpace(lines[at-1]), "(") {
		add = append(add, "")
	}
	for _, g := range group {
		add = append(add, indent+g)
	}
	add = append(add, "")
	lines = append(lines[:at], append(add, lines[at:]...)...)
	return strings.Join(lines, "\n"), nil
}

// removeDuplicateWebhookSetup removes the call of gopf's webhook.Setup that
// earlier versions of the plugin put after gopf.SetupWithManager, which
// sets up the admission handlers already (the second registration of a
// path makes controller-runtime's webhook server panic), and the import
// that only it used.
func removeDuplicateWebhookSetup(src string) (string, error) {
	const alias = "gopfwebhook"
	if !strings.Contains(src, "gopf.SetupWithManager(") || !strings.Contains(src, alias+".Setup(") {
		return src, nil
	}
	out, err := removeIf(src, func(call *ast.CallExpr) bool {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Setup" {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == alias
	})
	if err != nil || strings.Contains(out, alias+".") {
		return out, err
	}
	importLine := alias + " " + strconv.Quote(GopfModule+"/webhook")
	var kept []string
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) != importLine {
			kept = append(kept, line)
		}
	}
	return formatGo(mainPath, strings.Join(kept, "\n"))
}

// registerCall adds stmt (a call in registerHandlers or registerWebhooks)
// before marker, unless it is there already.
func registerCall(src, marker, stmt string) (string, error) {
	for _, line := range strings.Split(src, "\n") {
		if strings.TrimSpace(line) == stmt {
			return src, nil
		}
	}
	if markerLine(src, marker) < 0 {
		return "", fmt.Errorf("%s has no %q marker, where gopf adds %s. "+
			"Run \"kubebuilder edit --plugins gopf/v1-alpha\" to wire gopf into it, or add the call by hand", mainPath, marker, stmt)
	}
	return insertBefore(src, marker, stmt+"\n")
}

// registerInMain writes main (cmd/main.go's content, go/v4's setup of the
// kind removed) back with the call register(reg) of the package at
// importPath added before marker, importing the package as alias when it
// is not imported yet.
func (s *session) registerInMain(main, importPath, alias, marker, register string) error {
	main, name, err := ensureImport(main, importPath, alias)
	if err != nil {
		return err
	}
	main, err = registerCall(main, marker, name+"."+register+"(reg)")
	if err != nil {
		return err
	}
	main, err = formatGo(mainPath, main)
	if err != nil {
		return err
	}
	s.write(mainPath, main)
	return nil
}

// removeReconcilerSetup removes go/v4's setup of kind's Reconciler from
// main.go: the statement
//
//	if err := (&<pkg>.<Kind>Reconciler{...}).SetupWithManager(mgr); err != nil {...}
//
// It returns src unchanged when there is none.
func removeReconcilerSetup(src, kind string) (string, error) {
	return removeIf(src, func(call *ast.CallExpr) bool {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "SetupWithManager" {
			return false
		}
		x := ast.Unparen(sel.X)
		if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.AND {
			x = u.X
		}
		lit, ok := x.(*ast.CompositeLit)
		return ok && typeName(lit.Type) == kind+"Reconciler"
	})
}

// removeWebhookSetup removes go/v4's setup of kind's webhooks from main.go:
// the statement if err := <pkg>.Setup<Kind>WebhookWithManager(mgr); ..., and
// the if os.Getenv("ENABLE_WEBHOOKS") statement around it when nothing else
// is left in it.
func removeWebhookSetup(src, kind string) (string, error) {
	return removeIf(src, func(call *ast.CallExpr) bool {
		return typeName(call.Fun) == "Setup"+kind+"WebhookWithManager"
	})
}

// typeName is the name an expression refers to: x for x and pkg.x.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// removeIf removes the if statements whose init statement assigns the
// result of a call that match accepts, with an enclosing if statement
// left empty by the removal and the comment lines just above that one.
func removeIf(src string, match func(*ast.CallExpr) bool) (string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, mainPath, src, parser.ParseComments)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", mainPath, err)
	}
	type span struct{ from, to int } // 1-based lines, inclusive
	var spans []span
	var stack []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		stmt, ok := n.(*ast.IfStmt)
		if !ok || !initCalls(stmt, match) {
			return true
		}
		var target ast.Node = stmt
		withComments := false
		// stack ends with ..., outer *ast.IfStmt, *ast.BlockStmt, stmt.
		if len(stack) >= 3 {
			if block, ok := stack[len(stack)-2].(*ast.BlockStmt); ok && len(block.List) == 1 {
				if outer, ok := stack[len(stack)-3].(*ast.IfStmt); ok && outer.Body == block && outer.Else == nil && outer.Init == nil {
					target, withComments = outer, true
				}
			}
		}
		from, to := fset.Position(target.Pos()).Line, fset.Position(target.End()).Line
		if withComments {
			from = commentLinesAbove(src, from)
		}
		spans = append(spans, span{from, to})
		stack = stack[:len(stack)-1] // Inspect does not report the end of a node it is told to skip
		return false
	})
	if len(spans) == 0 {
		return src, nil
	}
	lines := strings.Split(src, "\n")
	drop := map[int]bool{}
	for _, s := range spans {
		for l := s.from; l <= s.to; l++ {
			drop[l-1] = true
		}
	}
	var out []string
	for i, line := range lines {
		if !drop[i] {
			out = append(out, line)
		}
	}
	return formatGo(mainPath, strings.Join(out, "\n"))
}

// initCalls reports whether an if statement's init statement assigns the
// result of a call that match accepts.
func initCalls(stmt *ast.IfStmt, match func(*ast.CallExpr) bool) bool {
	assign, ok := stmt.Init.(*ast.AssignStmt)
	if !ok || len(assign.Rhs) != 1 {
		return false
	}
	call, ok := assign.Rhs[0].(*ast.CallExpr)
	return ok && match(call)
}

// commentLinesAbove returns the first of the comment-only lines directly
// above line (1-based), or line itself when there are none. Marker
// comments stay.
func commentLinesAbove(src string, line int) int {
	lines := strings.Split(src, "\n")
	for line > 1 {
		t := strings.TrimSpace(lines[line-2])
		if !strings.HasPrefix(t, "//") || strings.Contains(t, "+kubebuilder:") || strings.Contains(t, "+gopf:") {
			break
		}
		line--
	}
	return line
}

// ensureImport makes src import importPath, as alias when it has to add the
// import (alias "" for the package's own name). It returns the name the
// package is known by in src.
func ensureImport(src, importPath, alias string) (string, string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, mainPath, src, parser.ImportsOnly)
	if err != nil {
		return "", "", fmt.Errorf("parsing %s: %w", mainPath, err)
	}
	for _, spec := range file.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		if p != importPath {
			continue
		}
		if spec.Name != nil {
			return src, spec.Name.Name, nil
		}
		return src, path.Base(p), nil
	}
	line := strconv.Quote(importPath)
	if alias != "" {
		line = alias + " " + line
	}
	name := alias
	if name == "" {
		name = path.Base(importPath)
	}
	if markerLine(src, markerImports) >= 0 {
		out, err := insertBefore(src, markerImports, line+"\n")
		return out, name, err
	}
	for _, decl := range file.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok && gen.Tok == token.IMPORT && gen.Rparen.IsValid() {
			at := fset.Position(gen.Rparen).Line - 1
			lines := strings.Split(src, "\n")
			lines = append(lines[:at], append([]string{"\t" + line}, lines[at:]...)...)
			return strings.Join(lines, "\n"), name, nil
		}
	}
	return "", "", fmt.Errorf("%s has no import block to add %s to", mainPath, importPath)
}

// markerLine returns the index of the first line holding marker, or -1.
func markerLine(src, marker string) int {
	for i, line := range strings.Split(src, "\n") {
		if strings.TrimSpace(line) == marker {
			return i
		}
	}
	return -1
}

// insertBefore inserts text (whole lines) before the line holding marker,
// indented as the marker is.
func insertBefore(src, marker, text string) (string, error) {
	i := markerLine(src, marker)
	if i < 0 {
		return "", fmt.Errorf("%s has no %q marker", mainPath, marker)
	}
	lines := strings.Split(src, "\n")
	indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
	var add []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if l == "" {
			add = append(add, "")
		} else {
			add = append(add, indent+l)
		}
	}
	lines = append(lines[:i], append(add, lines[i:]...)...)
	return strings.Join(lines, "\n"), nil
}

// formatGo gofmts Go source, reporting the file's name on failure.
func formatGo(name, src string) (string, error) {
	out, err := format.Source([]byte(src))
	if err != nil {
		return "", errors.New("the edited " + name + " is not valid Go (" + err.Error() + "); please report this with the file attached")
	}
	return string(out), nil
}
