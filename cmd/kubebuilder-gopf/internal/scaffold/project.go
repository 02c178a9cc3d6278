package scaffold

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
)

// project is what the plugin knows about the user's project: the PROJECT
// file (from the request's config, or the universe's PROJECT file for
// kubebuilder versions that do not send it) and the module path.
type project struct {
	protocol.Config
}

// loadProject reads the project's configuration from req.
func loadProject(req *protocol.Request) (*project, error) {
	p := &project{}
	switch {
	case req.Config != nil:
		p.Config = *req.Config
	case req.Universe["PROJECT"] != "":
		if err := yaml.Unmarshal([]byte(req.Universe["PROJECT"]), &p.Config); err != nil {
			return nil, fmt.Errorf("reading the PROJECT file: %w", err)
		}
	}
	if p.Repo == "" {
		p.Repo = modulePath(req.Universe[goModPath])
	}
	if p.Repo == "" {
		return nil, fmt.Errorf("the module path is unknown: neither the PROJECT file nor go.mod names it")
	}
	return p, nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?`)

// modulePath returns the module path declared by a go.mod file, or "".
func modulePath(gomod string) string {
	m := moduleLine.FindStringSubmatch(gomod)
	if m == nil {
		return ""
	}
	return m[1]
}

// kind is one resource of a create api or create webhook command, with
// everything the templates need to name it.
type kind struct {
	Group   string // as given to kubebuilder, e.g. "db" or "core"
	Version string // e.g. "v1"
	Kind    string // e.g. "Database"

	// QualifiedGroup is the API group, e.g. "db.example.com"; "" for the
	// core group.
	QualifiedGroup string
	// Plural is the resource name, e.g. "databases".
	Plural string
	// APIPath is the import path of the kind's Go types, APIAlias the
	// name they are imported as.
	APIPath  string
	APIAlias string
	// Own is true for kinds whose API the project defines (not built-in or
	// external kinds); their CRDs are in config/crd/bases.
	Own bool
	// Namespaced is false for cluster-scoped kinds.
	Namespaced bool
	// HasStatus is false for built-in kinds without a status subresource
	// (ConfigMap, Secret, ...), whose handlers need no RBAC on status.
	HasStatus bool
	// LabelKey is the label the handlers of a kind the project does not
	// define select their objects by, until the user chooses another:
	// "<domain>/managed".
	LabelKey string

	resource *protocol.Resource // the PROJECT entry, if any
}

var (
	versionPattern = regexp.MustCompile(`^v\d+((alpha|beta)\d+)?$`)
	groupPattern   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// resolveKind finds the kind named by the --group, --version and --kind
// flags in the project.
func (p *project) resolveKind(f flagValues) (*kind, error) {
	k := &kind{Group: f["group"], Version: f["version"], Kind: f["kind"]}
	if err := checkKindFlags(k); err != nil {
		return nil, err
	}
	k.resource = p.resource(k)
	p.describe(k)
	return k, nil
}

// checkKindFlags checks that the flags named k's group, version and kind,
// and that the names are valid.
func checkKindFlags(k *kind) error {
	var missing []string
	for _, n := range []struct{ flag, value string }{{"--group", k.Group}, {"--version", k.Version}, {"--kind", k.Kind}} {
		if n.value == "" || n.value == bareFlag {
			missing = append(missing, n.flag)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: give the kind's group, version and kind, e.g. --group db --version v1 --kind Database", strings.Join(missing, ", "))
	}
	if !groupPattern.MatchString(k.Group) {
		return fmt.Errorf("--group %q is not a valid API group name (lower-case letters, digits, '-' and '.')", k.Group)
	}
	if !versionPattern.MatchString(k.Version) {
		return fmt.Errorf("--version %q is not a Kubernetes API version such as v1, v1beta1 or v2alpha1", k.Version)
	}
	if !isExportedIdent(k.Kind) {
		return fmt.Errorf("--kind %q must be a CamelCase Go identifier starting with an upper-case letter, such as Database", k.Kind)
	}
	return nil
}

// resource returns the PROJECT file's entry of k's group, version and
// kind, or nil.
func (p *project) resource(k *kind) *protocol.Resource {
	for i := range p.Resources {
		r := &p.Resources[i]
		if r.Group == k.Group && r.Version == k.Version && r.Kind == k.Kind {
			return r
		}
	}
	return nil
}

// describe fills in what the templates need to know of k beyond its
// names, from its PROJECT entry when it has one and from the project's
// defaults otherwise.
func (p *project) describe(k *kind) {
	domain := p.Domain
	k.Own = true
	k.Namespaced = true
	if r := k.resource; r != nil {
		domain = r.Domain
		k.Plural = r.Plural
		k.APIPath = r.Path
		k.Own = r.API != nil && !r.External && !r.Core
		if r.API != nil {
			k.Namespaced = r.API.Namespaced
		}
	}
	switch {
	case k.Group == "core" && (domain == "" || strings.HasPrefix(k.APIPath, "k8s.io/api/")):
		k.QualifiedGroup = ""
	case domain == "":
		k.QualifiedGroup = k.Group
	default:
		k.QualifiedGroup = k.Group + "." + domain
	}
	if k.Plural == "" {
		k.Plural = plural(strings.ToLower(k.Kind))
	}
	k.HasStatus = !strings.HasPrefix(k.APIPath, "k8s.io/api/") || builtinHasStatus(k.QualifiedGroup, k.Version, k.Kind)
	k.LabelKey = "managed"
	if p.Domain != "" {
		k.LabelKey = p.Domain + "/managed"
	}
	if k.APIPath == "" {
		k.APIPath = p.Repo + "/api/" + p.groupDir(k) + k.Version
	}
	k.APIAlias = importAlias(k.Group, k.Version)
}

// builtinHasStatus reports whether a built-in kind has a status: its Go
// type in client-go's scheme has a Status field. Kinds the scheme does not
// know are taken to have one.
func builtinHasStatus(group, version, kindName string) bool {
	obj, err := clientgoscheme.Scheme.New(schema.GroupVersionKind{Group: group, Version: version, Kind: kindName})
	if err != nil {
		return true
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, ok := t.FieldByName("Status")
	return ok
}

// groupDir is the kind's group folder in a multi-group project ("db/"), ""
// otherwise.
func (p *project) groupDir(k *kind) string {
	if p.MultiGroup {
		return k.Group + "/"
	}
	return ""
}

// Lower is the kind in lower case, as kubebuilder names its files.
func (k *kind) Lower() string { return strings.ToLower(k.Kind) }

// Var is the kind as a local variable name, e.g. "database".
func (k *kind) Var() string {
	r := []rune(k.Kind)
	i := 0
	for i < len(r) && unicode.IsUpper(r[i]) && (i == 0 || i+1 == len(r) || unicode.IsUpper(r[i+1])) {
		r[i] = unicode.ToLower(r[i])
		i++
	}
	v := string(r)
	if isKeyword(v) || reservedNames[v] {
		v += "Obj"
	}
	return v
}

// reservedNames are names the generated files use for packages and
// variables, which a kind's variable must not shadow.
var reservedNames = map[string]bool{
	"client": true, "context": true, "ctx": true, "ctrl": true, "err": true, "gopf": true,
	"handlers": true, "metav1": true, "apierrors": true, "scheme": true, "time": true, "reg": true,
	"gopfenvtest": true, "webhook": true, "runtime": true, "obj": true, "a": true, "c": true,
}

// CustomResource reports whether the kind is not built in: gopf reads its
// CRD (where its state goes) and may wait for it to be installed.
func (k *kind) CustomResource() bool { return !strings.HasPrefix(k.APIPath, "k8s.io/api/") }

// RBACGroup is the group as RBAC markers write it: quoted empty for core.
func (k *kind) RBACGroup() string {
	if k.QualifiedGroup == "" {
		return `""`
	}
	return k.QualifiedGroup
}

// PathGroup is the group as gopf's webhook paths write it.
func (k *kind) PathGroup() string {
	if k.QualifiedGroup == "" {
		return "core"
	}
	return k.QualifiedGroup
}

// importAlias is the name kubebuilder imports a group version's types as:
// the group's first label without dashes, and the version ("dbv1").
func importAlias(group, version string) string {
	first, _, _ := strings.Cut(group, ".")
	return strings.NewReplacer("-", "", "_", "").Replace(first) + version
}

// plural is kubebuilder's plural of a lower-case kind for the common cases:
// "database" → "databases", "policy" → "policies", "class" → "classes".
// Irregular plurals are taken from the PROJECT file when it has them.
func plural(s string) string {
	switch {
	case s == "":
		return s
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	default:
		return s + "s"
	}
}

func isExportedIdent(s string) bool {
	for i, r := range s {
		switch {
		case i == 0 && !unicode.IsUpper(r):
			return false
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			return false
		}
	}
	return s != ""
}

func isKeyword(s string) bool {
	switch s {
	case "break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for",
		"func", "go", "goto", "if", "import", "interface", "map", "package", "range", "return", "select",
		"struct", "switch", "type", "var":
		return true
	}
	return false
}

// packageDir returns the import path of a folder of the project.
func (p *project) packageDir(dir string) string { return path.Join(p.Repo, dir) }
