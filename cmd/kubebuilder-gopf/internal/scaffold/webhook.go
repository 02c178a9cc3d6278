package scaffold

import (
	"fmt"
	"path"
	"strings"
)

// webhookSuiteMarker marks the webhook suite the plugin writes.
const webhookSuiteMarker = "+gopf:scaffold:webhook-suite"

// createWebhook replaces go/v4's defaulter and validator of the kind with
// gopf admission handlers: internal/webhook/<version>/<kind>_webhook.go
// becomes a file of OnMutate/OnValidate handlers with webhook markers for
// gopf's paths, its tests reach them through an envtest API server, and
// cmd/main.go registers them instead of setting go/v4's webhook up.
func (s *session) createWebhook() error {
	p, err := loadProject(s.req)
	if err != nil {
		return err
	}
	k, err := p.resolveKind(s.flags)
	if err != nil {
		return err
	}
	defaulting, validation, err := s.admissionKinds(k)
	if err != nil {
		return err
	}
	if err := s.requireWired(); err != nil {
		return err
	}
	dir := path.Join("internal/webhook", p.groupDir(k), k.Version)
	hook, err := s.findGoFile(path.Join(dir, k.Lower()+"_webhook.go"))
	if err != nil {
		return err
	}
	if hook == nil {
		return s.requireGoV4("run go/v4 first in the same command; the PROJECT file's layout does that for projects made with both plugins, "+
			"otherwise give --plugins go/v4,"+PluginKey, path.Join(dir, k.Lower()+"_webhook.go"))
	}
	data := fileData{
		kind: k, Boilerplate: s.boilerplate(), Package: hook.pkg,
		Defaulting: defaulting, Validation: validation, Paths: servedAt(k, defaulting, validation),
	}
	if err := s.writeAdmissionHandlers(hook, data); err != nil {
		return err
	}
	if err := s.writeAdmissionTest(dir, data); err != nil {
		return err
	}
	if err := s.webhookSuite(p, dir, hook.pkg); err != nil {
		return err
	}
	main, err := removeWebhookSetup(s.req.Universe[mainPath], k.Kind)
	if err != nil {
		return err
	}
	alias := "webhook" + importAlias(k.Group, k.Version)
	if !p.MultiGroup {
		alias = "webhook" + k.Version
	}
	return s.registerInMain(main, p.packageDir(dir), alias, markerWebhooks, "Register"+k.Kind+"Webhooks")
}

// admissionKinds reads which admission handlers the flags ask for: a
// mutating one (--defaulting), a validating one (--programmatic-validation),
// or both. Conversion webhooks are not gopf's.
func (s *session) admissionKinds(k *kind) (defaulting, validation bool, err error) {
	if s.flags.bool("conversion") {
		return false, false, fmt.Errorf("%s does not scaffold conversion webhooks: gopf has no conversion handlers. "+
			"Run \"kubebuilder create webhook --plugins go/v4 --group %s --version %s --kind %s --conversion ...\" for controller-runtime's, "+
			"and this command without --conversion for gopf's defaulting and validation handlers", PluginKey, k.Group, k.Version, k.Kind)
	}
	defaulting, validation = s.flags.bool("defaulting"), s.flags.bool("programmatic-validation")
	if !defaulting && !validation {
		return false, false, fmt.Errorf("give --defaulting (a mutating handler), --programmatic-validation (a validating handler), or both")
	}
	return defaulting, validation, nil
}

// writeAdmissionHandlers replaces go/v4's webhook file with gopf admission
// handlers, unless it has them already.
func (s *session) writeAdmissionHandlers(hook *goFile, data fileData) error {
	if strings.Contains(hook.content, "func Register"+data.Kind+"Webhooks(") {
		s.note("%s already has gopf admission handlers; leaving it as it is (add handlers.OnMutate or handlers.OnValidate there by hand)", hook.path)
		return nil
	}
	if !strings.Contains(hook.content, "Setup"+data.Kind+"WebhookWithManager") {
		s.note("replacing %s, which does not look like go/v4's scaffold, with gopf admission handlers", hook.path)
	}
	content, err := render("webhook.go.tmpl", data)
	if err != nil {
		return err
	}
	s.write(hook.path, content)
	return nil
}

// writeAdmissionTest writes the admission handlers' test into dir, unless a
// test other than go/v4's is there.
func (s *session) writeAdmissionTest(dir string, data fileData) error {
	testPath := path.Join(dir, data.Lower()+"_webhook_test.go")
	if old, ok := s.req.Universe[testPath]; !ok || isGoV4WebhookTest(old) {
		content, err := render("webhook_test.go.tmpl", data)
		if err != nil {
			return err
		}
		s.write(testPath, content)
	}
	return nil
}

// isGoV4WebhookTest reports whether a webhook test is go/v4's, which uses
// the defaulter and validator types gopf replaces.
func isGoV4WebhookTest(content string) bool {
	return strings.Contains(content, "Defaulter") || strings.Contains(content, "Validator")
}

// servedAt lists where gopf serves a kind's admission handlers.
func servedAt(k *kind, defaulting, validation bool) []string {
	base := "/" + k.PathGroup() + "/" + k.Version + "/" + k.Lower()
	var paths []string
	if defaulting {
		paths = append(paths, "/mutate"+base+"    (the mutating handlers)")
	}
	if validation {
		paths = append(paths, "/validate"+base+"  (the validating handlers)")
	}
	return paths
}

// webhookSuite writes the envtest suite of a webhook package: it starts a
// control plane and an operator with the admission handlers of every kind
// the package registers. go/v4's suite is replaced (it sets up go/v4's
// webhooks); one the user wrote is left alone.
func (s *session) webhookSuite(p *project, dir, pkg string) error {
	suitePath := path.Join(dir, "webhook_suite_test.go")
	if old, ok := s.req.Universe[suitePath]; ok && !strings.Contains(old, webhookSuiteMarker) && !strings.Contains(old, "WebhookWithManager(") {
		s.note("%s is not go/v4's or gopf's; leaving it as it is (register the package's handlers with gopf in it by hand)", suitePath)
		return nil
	}
	data := fileData{Boilerplate: s.boilerplate(), Package: pkg}
	seen := map[string]bool{}
	for _, name := range s.registerFuncs(dir, "Webhooks") {
		k, err := p.resolveKind(flagValues{"group": groupOf(p, dir, name), "version": path.Base(dir), "kind": name})
		if err != nil {
			s.note("%s: leaving %s out of the webhook suite: %v", suitePath, name, err)
			continue
		}
		data.Kinds = append(data.Kinds, k)
		if !seen[k.APIPath] {
			seen[k.APIPath] = true
			data.Imports = append(data.Imports, apiImport{Alias: k.APIAlias, Path: k.APIPath})
		}
	}
	elems := strings.Split(dir, "/")
	up := make([]string, len(elems), len(elems)+3)
	for i := range up {
		up[i] = ".."
	}
	data.CRDPath = joinArgs(append(up, "config", "crd", "bases"))
	content, err := render("webhook_suite_test.go.tmpl", data)
	if err != nil {
		return err
	}
	s.write(suitePath, content)
	return nil
}

// groupOf finds the group of a kind whose webhooks are in dir: from the
// folder in a multi-group project, else from the PROJECT file's resources.
func groupOf(p *project, dir, kindName string) string {
	if p.MultiGroup {
		return path.Base(path.Dir(dir))
	}
	for _, r := range p.Resources {
		if r.Kind == kindName && r.Version == path.Base(dir) {
			return r.Group
		}
	}
	return ""
}
