// Command unstructured handles a kind it has no Go types for, as a port of a
// Kopf operator often starts: a Webpage (pages.example.gopf.dev/v1, its CRD
// written by hand in config/crd/bases) arrives in the handlers as an
// *unstructured.Unstructured, registered with handlers.ForKind. No scheme,
// no generated code.
//
//   - create_page (on create) renders the page into a ConfigMap's
//     index.html, named after the Webpage and adopted by it; the
//     ConfigMap's name lands in status.create_page.configMap.
//   - update_page (on changes of spec) reads that name back from the
//     status and patches the ConfigMap's index.html and theme label with a
//     objects.ChildPatch: those fields only, whatever else the ConfigMap
//     holds.
//
// The handlers read fields with objects.Decode, into a plain struct
// (pageSpec) or a string, rather than with unstructured.NestedString and
// type assertions.
package main

import (
	"context"
	"fmt"
	"html"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
)

// The handled kind, and the label the operator puts on the ConfigMaps.
const (
	group      = "pages.example.gopf.dev"
	version    = "v1"
	kind       = "Webpage"
	themeLabel = "pages.example.gopf.dev/theme"
)

// pageSpec is what the handlers read of a Webpage's spec: a struct to decode
// into, not a type registered with a scheme.
type pageSpec struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Theme string `json:"theme"`
}

func main() {
	gopf.Main(registry()) // no Go types, so no scheme to add to
}

// registry registers the handlers. Uses declares what they do with
// ConfigMaps, so that --print-rbac and --check-rbac know it.
func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	webpages := handlers.ForKind(group, version, kind)
	configMaps := &corev1.ConfigMap{}
	handlers.OnCreate(reg, createPage, webpages, handlers.ID("create_page"),
		handlers.Uses(configMaps, "create", "patch"))
	handlers.OnUpdate(reg, updatePage, webpages, handlers.Field("spec"), handlers.ID("update_page"),
		handlers.Uses(configMaps, "patch"))
	return reg
}

// createPage makes the Webpage's ConfigMap. A ConfigMap of that name that
// exists already (made by an earlier attempt whose result was not stored)
// is brought up to date instead.
func createPage(ctx context.Context, page *unstructured.Unstructured, c *handlers.Cause) (any, error) {
	spec, err := objects.Decode[pageSpec](page, "spec")
	if err != nil {
		return nil, handlers.Permanent(err)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"index.html": render(spec)}}
	if spec.Theme != "" {
		cm.Labels = map[string]string{themeLabel: spec.Theme}
	}
	if err := objects.Adopt(page, cm, objects.Strict()); err != nil {
		return nil, err
	}
	err = c.Client.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		err = c.Client.Patch(ctx, cm, contentPatch(spec))
	}
	if err != nil {
		return nil, fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
	}
	c.Info("Rendered", "rendered %q into ConfigMap %s", spec.Title, cm.Name)
	return map[string]any{"configMap": cm.Name}, nil
}

// updatePage patches the ConfigMap that createPage recorded in the status.
func updatePage(ctx context.Context, page *unstructured.Unstructured, c *handlers.Cause) (any, error) {
	name, err := objects.Decode[string](page, "status.create_page.configMap")
	if err != nil {
		return nil, handlers.Permanent(err)
	}
	if name == "" {
		return nil, handlers.Permanent(fmt.Errorf("status.create_page.configMap is empty: the page was never rendered"))
	}
	spec, err := objects.Decode[pageSpec](page, "spec")
	if err != nil {
		return nil, handlers.Permanent(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: page.GetNamespace(), Name: name}}
	err = c.Client.Patch(ctx, cm, contentPatch(spec))
	if apierrors.IsNotFound(err) {
		return nil, handlers.Permanent(fmt.Errorf("ConfigMap %s is gone", name))
	}
	if err != nil {
		return nil, fmt.Errorf("patching ConfigMap %s: %w", name, err)
	}
	c.Info("Rendered", "rendered %q into ConfigMap %s", spec.Title, name)
	return nil, nil
}

// contentPatch sets what the operator keeps in a page's ConfigMap: its
// index.html, and the theme label, removed when the page has no theme.
func contentPatch(spec pageSpec) *objects.ChildPatch {
	var theme *string
	if spec.Theme != "" {
		theme = &spec.Theme
	}
	return objects.NewChildPatch().
		SetKeys([]string{"data", "index.html"}, render(spec)). // the key has a dot: Set("data.index.html") would nest
		SetLabel(themeLabel, theme)
}

// render is the page as HTML.
func render(spec pageSpec) string {
	return fmt.Sprintf("<html><head><title>%s</title></head><body><h1>%[1]s</h1><p>%s</p></body></html>",
		html.EscapeString(spec.Title), html.EscapeString(spec.Body))
}
