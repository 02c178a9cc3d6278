package scaffold

import (
	"fmt"
	"path"
	"strings"
)

// createAPI replaces go/v4's Reconciler of the kind with gopf handlers:
// internal/controller/<kind>_controller.go becomes a handlers file, its test
// an envtest test of the handlers, and cmd/main.go registers the handlers
// instead of setting the Reconciler up.
func (s *session) createAPI() error {
	p, err := loadProject(s.req)
	if err != nil {
		return err
	}
	k, err := p.resolveKind(s.flags)
	if err != nil {
		return err
	}
	if err := s.requireWired(); err != nil {
		return err
	}
	dir := "internal/controller"
	candidates := []string{path.Join(dir, p.groupDir(k), k.Lower()+"_controller.go")}
	if p.MultiGroup {
		candidates = append(candidates, path.Join(dir, k.Lower()+"_controller.go"))
	}
	controller, err := s.findGoFile(candidates...)
	if err != nil {
		return err
	}
	if controller == nil {
		if s.controllerDeclined(k) {
			s.note("no controller was scaffolded for %s (--controller=false), so there are no handlers to add; run \"kubebuilder create api --group %s --version %s --kind %s --controller --resource=false\" for them later",
				k.Kind, k.Group, k.Version, k.Kind)
			return nil
		}
		return s.requireGoV4("run go/v4 first in the same command; the PROJECT file's layout does that for projects made with both plugins, "+
			"otherwise give --plugins go/v4,"+PluginKey, candidates[0])
	}
	data := fileData{kind: k, Boilerplate: s.boilerplate(), Package: controller.pkg}

	if strings.Contains(controller.content, "func Register"+k.Kind+"Handlers(") {
		s.note("%s already has gopf handlers; leaving it as it is", controller.path)
	} else {
		if !strings.Contains(controller.content, k.Kind+"Reconciler") {
			s.note("replacing %s, which does not look like go/v4's scaffold, with gopf handlers", controller.path)
		}
		content, err := render("controller.go.tmpl", data)
		if err != nil {
			return err
		}
		s.write(controller.path, content)
	}

	testPath := strings.TrimSuffix(controller.path, ".go") + "_test.go"
	if old, ok := s.req.Universe[testPath]; !ok || isGoV4ControllerTest(old, k.Kind) {
		content, err := render("controller_test.go.tmpl", data)
		if err != nil {
			return err
		}
		s.write(testPath, content)
	}
	if _, ok := s.file(path.Join(path.Dir(controller.path), "suite_test.go")); !ok {
		s.note("%s has no suite_test.go, which the handlers' test needs (it starts the control plane: cfg, k8sClient)", path.Dir(controller.path))
	}

	main := s.req.Universe[mainPath]
	main, err = removeReconcilerSetup(main, k.Kind)
	if err != nil {
		return err
	}
	alias := ""
	switch {
	case p.MultiGroup:
		alias = importAlias(k.Group, "") + "controller"
	case controller.pkg != path.Base(path.Dir(controller.path)):
		alias = controller.pkg
	}
	main, name, err := ensureImport(main, p.packageDir(path.Dir(controller.path)), alias)
	if err != nil {
		return err
	}
	main, err = registerCall(main, markerHandlers, fmt.Sprintf("%s.Register%sHandlers(reg)", name, k.Kind))
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

// isGoV4ControllerTest reports whether a controller test is go/v4's: for
// kinds the project defines it runs the kind's Reconciler; for others it is
// an empty spec named after the controller.
func isGoV4ControllerTest(content, kindName string) bool {
	return strings.Contains(content, kindName+"Reconciler{") || strings.Contains(content, `Describe("`+kindName+` Controller"`)
}

// controllerDeclined reports whether the user asked for no controller.
func (s *session) controllerDeclined(k *kind) bool {
	if s.flags.has("controller") {
		return !s.flags.bool("controller")
	}
	return k.resource != nil && !k.resource.Controller
}
