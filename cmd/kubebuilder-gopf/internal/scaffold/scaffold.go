// Package scaffold is what the gopf/v1-alpha kubebuilder plugin does with
// each request: it turns a project kubebuilder's go/v4 plugin has just
// scaffolded (the request's universe) into a gopf operator, and answers with
// the files it changes.
//
//   - init and edit wire gopf in: go.mod requires gopf, cmd/main.go sets a
//     gopf registry up on go/v4's manager (the user's flags and manager
//     options stay), and the Makefile provides envtest's control plane
//     through hack/setup-envtest.sh, which builds it from the Go module
//     proxy when the usual download is out of reach. edit also tidies
//     go.mod, which go/v4 does after init only.
//   - create api replaces go/v4's empty Reconciler of the kind with gopf
//     handlers (create, update, delete and a level reconcile, with RBAC
//     markers) registered in cmd/main.go, and its test with an envtest test
//     of the handlers. Handlers of kinds the project does not define
//     (built-in ones) select their objects by a label and keep no finalizer.
//   - create webhook replaces go/v4's defaulter and validator with gopf
//     admission handlers (handlers.OnMutate, handlers.OnValidate) served at
//     gopf's paths, and its tests with an envtest suite that reaches them
//     through the API server.
//   - flags and metadata describe the plugin's flags and subcommands.
//
// Every edit is idempotent: a file that already has gopf's content is left
// as it is, so running a command twice changes nothing the second time.
package scaffold

import (
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
)

// PluginKey is the plugin's name and version as kubebuilder knows it.
const PluginKey = "gopf/v1-alpha"

// Options are the plugin's settings that do not come from the request.
type Options struct {
	// Getenv reads the environment (GOPF_VERSION, GOPF_REPLACE). Default:
	// os.Getenv.
	Getenv func(string) string
	// Year goes into license headers. Default: the current year.
	Year int
	// BuildVersion is the version of gopf the plugin was built from, from
	// the binary's build information: a release when it was installed
	// with go install ...@version, "" or "(devel)" otherwise.
	BuildVersion string
	// Checkout is the gopf checkout the plugin was built from, when the
	// build recorded it (make install-plugin does). Projects scaffolded by
	// such a build use it through a replace directive unless told otherwise.
	Checkout string
	// Notes receives remarks for the user; kubebuilder passes the plugin's
	// stderr through. Default: discarded.
	Notes io.Writer
	// Dir is the project's folder, against which relative replace
	// directives of go.mod are resolved when edit tidies it. Kubebuilder
	// runs the plugin there. Default: the working directory.
	Dir string
}

func (o Options) withDefaults() Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Year == 0 {
		o.Year = time.Now().Year()
	}
	if o.Notes == nil {
		o.Notes = io.Discard
	}
	if o.Dir == "" {
		o.Dir, _ = os.Getwd()
	}
	return o
}

// Keep tells the request decoder which universe entries the plugin reads:
// the files it edits, and go.sum and the project's Go files, which edit
// tidies go.mod against. Everything else (binaries, vendored code, .git,
// manifests) is skipped unread. It does not depend on the command, which
// may come after the universe in the request.
func Keep(p string) bool {
	switch p {
	case goModPath, goSumPath, "Makefile", "PROJECT", setupEnvtestPath, "hack/boilerplate.go.txt":
		return true
	}
	return isProjectGoFile(p)
}

// Handle answers one request.
func Handle(req *protocol.Request, opts Options) protocol.Response {
	opts = opts.withDefaults()
	if req.APIVersion != "" && req.APIVersion != protocol.APIVersion {
		return protocol.Errorf(req, fmt.Sprintf("%s speaks the external plugin protocol %s, not %q: use a kubebuilder v4 release", PluginKey, protocol.APIVersion, req.APIVersion))
	}
	s := &session{req: req, opts: opts, flags: parseArgs(req.Args), out: map[string]string{}}
	var err error
	switch req.Command {
	case protocol.CommandFlags:
		return flagsResponse(req)
	case protocol.CommandMetadata:
		return metadataResponse(req)
	case protocol.CommandInit:
		err = s.wire(true)
	case protocol.CommandEdit:
		err = s.wire(false)
	case protocol.CommandCreateAPI:
		err = s.createAPI()
	case protocol.CommandCreateWebhook:
		err = s.createWebhook()
	default:
		return protocol.Errorf(req, fmt.Sprintf("%s does not know the command %q; it answers init, edit, create api, create webhook, flags and metadata", PluginKey, req.Command))
	}
	if err != nil {
		return protocol.Errorf(req, err.Error())
	}
	resp := protocol.NewResponse(req)
	resp.Universe = s.out
	return resp
}

// session is the handling of one scaffolding request.
type session struct {
	req   *protocol.Request
	opts  Options
	flags flagValues
	out   map[string]string // the files written or changed
}

// file returns a file's content: what this request writes, else what the
// universe holds.
func (s *session) file(p string) (string, bool) {
	if c, ok := s.out[p]; ok {
		return c, true
	}
	c, ok := s.req.Universe[p]
	return c, ok
}

// write records a file for the response, unless it is unchanged.
func (s *session) write(p, content string) {
	if old, ok := s.req.Universe[p]; ok && old == content {
		delete(s.out, p)
		return
	}
	s.out[p] = content
}

func (s *session) note(format string, args ...any) {
	fmt.Fprintf(s.opts.Notes, "%s: %s\n", PluginKey, fmt.Sprintf(format, args...))
}

// requireGoV4 fails naming the go/v4 files the universe lacks, with hint
// saying what to do.
func (s *session) requireGoV4(hint string, paths ...string) error {
	var missing []string
	for _, p := range paths {
		if _, ok := s.req.Universe[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	chain := ""
	if len(s.req.PluginChain) > 0 {
		chain = fmt.Sprintf(" (the plugins of this command: %s)", strings.Join(s.req.PluginChain, ", "))
	}
	return fmt.Errorf("the project has no %s%s. %s builds on what kubebuilder's go/v4 plugin scaffolds: %s",
		strings.Join(missing, ", "), chain, PluginKey, hint)
}

// boilerplate returns the project's license header.
func (s *session) boilerplate() string {
	return boilerplate(s.req.Universe["hack/boilerplate.go.txt"], s.opts.Year)
}

// wire makes the project a gopf project: the init and edit commands.
func (s *session) wire(init bool) error {
	if init {
		if err := s.requireGoV4("run go/v4 first in the same command, as in kubebuilder init --plugins go/v4,"+PluginKey+" --domain <domain> --repo <module>", goModPath, mainPath, "Makefile"); err != nil {
			return err
		}
	} else if err := s.requireGoV4("run edit in the folder of a project that go/v4 scaffolded", goModPath, mainPath); err != nil {
		return err
	}
	gomod, err := s.gopfGoMod(s.req.Universe[goModPath])
	if err != nil {
		return err
	}
	s.write(goModPath, gomod)

	main, err := addGopf(s.req.Universe[mainPath], modulePath(s.req.Universe[goModPath]))
	if err != nil {
		return err
	}
	s.write(mainPath, main)

	if mk, ok := s.req.Universe["Makefile"]; ok {
		patched, todo := patchMakefile(mk)
		for _, t := range todo {
			s.note("Makefile: %s", t)
		}
		s.write("Makefile", patched)
	} else {
		s.note("the project has no Makefile; hack/setup-envtest.sh prints a KUBEBUILDER_ASSETS folder for go test")
	}
	if old, ok := s.req.Universe[setupEnvtestPath]; !ok || !strings.Contains(old, "gopf/v1-alpha") {
		if ok {
			s.note("replacing %s with gopf's, which also builds the control plane from the Go module proxy", setupEnvtestPath)
		}
		s.write(setupEnvtestPath, setupEnvtestScript)
	}
	if !init {
		// go/v4 tidies go.mod after init; after edit nothing else does.
		if _, changed := s.out[goModPath]; changed {
			s.tidy()
		}
		s.noteLayout()
	}
	return nil
}

// noteLayout tells the user, after edit, how to have gopf take part in the
// later commands. Kubebuilder runs the plugins of the PROJECT file's
// layout when a command names none, and it writes the layout itself at
// init only: a plugin's answer cannot change it (kubebuilder saves its own
// copy of the PROJECT file after the plugins ran). The layout is read from
// the PROJECT file on disk: the request's config names the plugin running
// the command first whether the file lists it or not.
func (s *session) noteLayout() {
	var onDisk struct {
		Layout any `json:"layout"`
	}
	if err := yaml.Unmarshal([]byte(s.req.Universe["PROJECT"]), &onDisk); err != nil || onDisk.Layout == nil {
		return
	}
	switch l := onDisk.Layout.(type) {
	case string:
		if l == PluginKey {
			return
		}
	case []any:
		for _, key := range l {
			if key == PluginKey {
				return
			}
		}
	}
	s.note("the PROJECT file's layout does not name %s, and kubebuilder does not let a plugin add it after init: "+
		"give --plugins go/v4,%s to each later \"kubebuilder create api\" and \"kubebuilder create webhook\" "+
		"(without it they scaffold go/v4's Reconcilers and webhooks, which run next to gopf's handlers)", PluginKey, PluginKey)
}

// gopfGoMod adds gopf to go.mod: required at the version the flags or the
// environment give, else the one go.mod already requires, else the one the
// plugin was built from; replaced by a local checkout when one is given
// (or, for a plugin built by make install-plugin, by that checkout unless
// go.mod already names a gopf).
func (s *session) gopfGoMod(gomod string) (string, error) {
	version := s.setting("gopf-version", "GOPF_VERSION")
	replace := s.setting("gopf-replace", "GOPF_REPLACE")
	if version == bareFlag || replace == bareFlag {
		return "", fmt.Errorf("--gopf-version and --gopf-replace need a value, e.g. --gopf-version v0.3.0 or --gopf-replace ../gopf")
	}
	if version != "" && !validVersion(version) {
		return "", fmt.Errorf("--gopf-version %q is not a module version such as v0.3.0", version)
	}
	release := validVersion(s.opts.BuildVersion) && !strings.Contains(s.opts.BuildVersion, "+")
	if replace == "" && version == "" && s.opts.Checkout != "" && replacedGopf(gomod) == "" && requiredGopf(gomod) == "" {
		replace = s.opts.Checkout
		s.note("go.mod: using the gopf checkout this plugin was built from, %s (--gopf-version vX.Y.Z uses a release instead)", replace)
	}
	target := ""
	if replace != "" {
		var err error
		if target, err = localReplacePath(replace); err != nil {
			return "", fmt.Errorf("--gopf-replace: %w", err)
		}
		if _, err := os.Stat(path.Join(target, goModPath)); err != nil && path.IsAbs(target) {
			s.note("go.mod: %s has no go.mod; the replace directive will not work until it holds a gopf checkout", target)
		}
	}
	switch {
	case version != "":
	case requiredGopf(gomod) != "":
		version = requiredGopf(gomod)
	case release:
		version = s.opts.BuildVersion
	case target != "" || replacedGopf(gomod) != "":
		version = PlaceholderVersion
	default:
		return "", fmt.Errorf("which gopf should the project use? This plugin was built without a version of gopf. " +
			"Give --gopf-version vX.Y.Z for a release, or --gopf-replace <folder of a gopf checkout> for a local one " +
			"(or set GOPF_VERSION / GOPF_REPLACE); \"make install-plugin\" in a gopf checkout builds a plugin that defaults to that checkout")
	}
	gomod = setGopfRequire(gomod, version)
	if target != "" {
		gomod = setGopfReplace(gomod, target)
	}
	return gomod, nil
}

// setting is a flag's value, else an environment variable's.
func (s *session) setting(flag, env string) string {
	if v := s.flags[flag]; v != "" {
		return v
	}
	return s.opts.Getenv(env)
}

// requireWired fails unless cmd/main.go has gopf's markers.
func (s *session) requireWired() error {
	if err := s.requireGoV4("run the command in the folder of a project that go/v4 scaffolded (it writes cmd/main.go at init)", mainPath); err != nil {
		return err
	}
	if !hasGopf(s.req.Universe[mainPath]) {
		return fmt.Errorf("%s is not wired to gopf yet (it has no %q marker). Run \"kubebuilder edit --plugins %s\" first, then this command again",
			mainPath, markerHandlers, PluginKey)
	}
	return nil
}

// goFile is a Go file of the universe that go/v4 scaffolded for a kind.
type goFile struct {
	path    string
	pkg     string // its package name
	content string
}

// findGoFile returns the first of the candidate paths the universe holds,
// with its package name.
func (s *session) findGoFile(candidates ...string) (*goFile, error) {
	for _, p := range candidates {
		content, ok := s.req.Universe[p]
		if !ok {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, content, parser.PackageClauseOnly)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		return &goFile{path: p, pkg: f.Name.Name, content: content}, nil
	}
	return nil, nil
}

// registerFuncs lists the kinds whose Register<Kind><suffix> functions the
// Go files of dir define, sorted.
func (s *session) registerFuncs(dir, suffix string) []string {
	re := regexp.MustCompile(`(?m)^func Register(\w+)` + suffix + `\(`)
	var kinds []string
	seen := map[string]bool{}
	for p := range s.req.Universe {
		if path.Dir(p) != dir || strings.HasSuffix(p, "_test.go") {
			continue
		}
		content, _ := s.file(p)
		for _, m := range re.FindAllStringSubmatch(content, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				kinds = append(kinds, m[1])
			}
		}
	}
	for p, content := range s.out {
		if path.Dir(p) != dir || strings.HasSuffix(p, "_test.go") {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(content, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				kinds = append(kinds, m[1])
			}
		}
	}
	sort.Strings(kinds)
	return kinds
}
