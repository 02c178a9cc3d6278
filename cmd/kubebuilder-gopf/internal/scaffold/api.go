package scaffold

import (
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
	controller, err := s.controllerFile(p, k)
	if err != nil || controller == nil {
		return err
	}
	data := fileData{kind: k, Boilerplate: s.boilerplate(), Package: controller.pkg}
	if err := s.writeHandlers(controller, data); err != nil {
		return err
	}
	if err := s.writeHandlersTest(controller, data); err != nil {
		return err
	}
	main, err := removeReconcilerSetup(s.req.Universe[mainPath], k.Kind)
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
	return s.registerInMain(main, p.packageDir(path.Dir(controller.path)), alias, markerHandlers, "Register"+k.Kind+"Handlers")
}

// controllerFile finds the controller go/v4 scaffolded for k. It returns
// nil, with a note, when the user asked for no controller, and an error
// when go/v4 has not run.
func (s *session) controllerFile(p *project, k *kind) (*goFile, error) {
	dir := "internal/controller"
	candidates := []string{path.Join(dir, p.groupDir(k), k.Lower()+"_controller.go")}
	if p.MultiGroup {
		candidates = append(candidates, path.Join(dir, k.Lower()+"_controller.go"))
	}
	controller, err := s.findGoFile(candidates...)
	if err != nil || controller != nil {
		return controller, err
	}
	if s.controllerDeclined(k) {
		s.note("no controller was scaffolded for %s (--controller=false), so there are no handlers to add; run \"kubebuilder create api --group %s --version %s --kind %s --controller --resource=false\" for them later",
			k.Kind, k.Group, k.Version, k.Kind)
		return nil, nil
	}
	return nil, s.requireGoV4("run go/v4 first in the same command; the PROJECT file's layout does that for projects made with both plugins, "+
		"otherwise give --plugins go/v4,"+PluginKey, candidates[0])
}

// writeHandlers replaces the controller with a file of gopf handlers,
// unless it has them already.
func (s *session) writeHandlers(controller *goFile, data fileData) error {
	if strings.Contains(controller.content, "func Register"+data.Kind+"Handlers(") {
		s.note("%s already has gopf handlers; leaving it as it is", controller.path)
		return nil
	}
	if !strings.Contains(controller.content, data.Kind+"Reconciler") {
		s.note("replacing %s, which does not look like go/v4's scaffold, with gopf handlers", controller.path)
	}
	content, err := render("controller.go.tmpl", data)
	if err != nil {
		return err
	}
	s.write(controller.path, content)
	return nil
}

// writeHandlersTest writes the handlers' test beside the controller, unless
// a test other than go/v4's is there, and notes a missing envtest suite.
func (s *session) writeHandlersTest(controller *goFile, data fileData) error {
	testPath := strings.TrimSuffix(controller.path, ".go") + "_test.go"
	if old, ok := s.req.Universe[testPath]; !ok || isGoV4ControllerTest(old, data.Kind) {
		content, err := render("controller_test.go.tmpl", data)
		if err != nil {
			return err
		}
		s.write(testPath, content)
	}
	if _, ok := s.file(path.Join(path.Dir(controller.path), "suite_test.go")); !ok {
		s.note("%s has no suite_test.go, which the handlers' test needs (it starts the control plane: cfg, k8sClient)", path.Dir(controller.path))
	}
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
