package operator

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestTheCommonSelectorIsWhatEveryHandlersLabelFiltersImply(t *testing.T) {
	yes := spec.Func(func(any) bool { return true })
	for _, tc := range []struct {
		name    string
		filters []map[string]spec.Filter
		want    string // "" for no selector
	}{
		{"one handler", []map[string]spec.Filter{{"app": spec.Equal("a"), "tier": spec.Present}}, "app in (a),tier"},
		{"values gather", []map[string]spec.Filter{{"app": spec.Equal("a")}, {"app": spec.Equal("b")}, {"app": spec.Equal("a")}}, "app in (a,b)"},
		{"present takes in values", []map[string]spec.Filter{{"app": spec.Equal("a")}, {"app": spec.Present}}, "app"},
		{"absent joins absent", []map[string]spec.Filter{{"skip": spec.Absent}, {"skip": spec.Absent, "app": spec.Present}}, "!skip"},
		{"absent and present do not join", []map[string]spec.Filter{{"app": spec.Absent}, {"app": spec.Present}}, ""},
		{"only the keys all require", []map[string]spec.Filter{{"app": spec.Equal("a"), "tier": spec.Present}, {"app": spec.Present}}, "app"},
		{"nothing in common", []map[string]spec.Filter{{"app": spec.Present}, {"tier": spec.Present}}, ""},
		{"a handler without labels", []map[string]spec.Filter{{"app": spec.Present}, nil}, ""},
		{"function filters stay in memory", []map[string]spec.Filter{{"app": yes}}, ""},
		{"a function beside a value", []map[string]spec.Filter{{"app": spec.Equal("a"), "tier": yes}}, "app in (a)"},
		{"values that are no label values", []map[string]spec.Filter{{"app": spec.Equal(3)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := commonSelector(tc.filters)
			switch {
			case tc.want == "" && sel != nil:
				t.Errorf("selector %q, want none", sel)
			case tc.want != "" && (sel == nil || sel.String() != tc.want):
				t.Errorf("selector %v, want %q", sel, tc.want)
			}
		})
	}
}

func TestOnlyKindsWhoseEveryHandlerSelectsOnLabelsAreNarrowed(t *testing.T) {
	cms := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cms, meta.RESTScopeNamespace)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	app := handlers.Labels{"app": "a"}
	create := func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) { return nil, nil }
	level := func(context.Context, *corev1.ConfigMap, *handlers.Cause) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}
	index := func(*corev1.ConfigMap, *handlers.Cause) map[string]bool { return nil }
	onEvent := func(context.Context, *corev1.ConfigMap, *handlers.Cause) error { return nil }
	deployment := func(context.Context, *appsv1.Deployment, *handlers.Cause) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}

	for _, tc := range []struct {
		name     string
		register func(reg *handlers.Registry)
		want     string
	}{
		{"every handler selects", func(reg *handlers.Registry) {
			handlers.OnCreate(reg, create, app)
			handlers.OnReconcile(reg, level, handlers.Labels{"app": "b"})
			handlers.OnIndex(reg, "ix", index, app)
		}, "app in (a,b)"},
		{"one handler takes every object", func(reg *handlers.Registry) {
			handlers.OnCreate(reg, create, app)
			handlers.OnIndex(reg, "ix", index)
		}, ""},
		{"an event handler", func(reg *handlers.Registry) {
			handlers.OnCreate(reg, create, app)
			handlers.OnEvent(reg, onEvent, app)
		}, ""},
		{"a level handler owns the kind", func(reg *handlers.Registry) {
			handlers.OnCreate(reg, create, app)
			handlers.OnReconcile(reg, deployment, handlers.Owns(&corev1.ConfigMap{}))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := handlers.NewRegistry()
			tc.register(reg)
			kinds := narrowKinds(reg, clientgoscheme.Scheme, mapper)
			k, ok := kinds[cms]
			switch {
			case tc.want == "" && ok:
				t.Errorf("ConfigMaps narrowed to %q", k.selector)
			case tc.want != "" && !ok:
				t.Errorf("ConfigMaps not narrowed, want %q", tc.want)
			case ok && k.selector.String() != tc.want:
				t.Errorf("ConfigMaps narrowed to %q, want %q", k.selector, tc.want)
			case ok && !k.selector.Matches(labels.Set{"app": "a"}):
				t.Errorf("the selector %q does not take an object the handlers select", k.selector)
			}
			if _, ok := kinds[appsv1.SchemeGroupVersion.WithKind("Deployment")]; ok {
				t.Error("Deployments narrowed, whose handler takes every object")
			}
		})
	}
}
