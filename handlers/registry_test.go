package handlers_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf/handlers"
)

func createFn(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil }

type widget struct{}

func (widget) onCreate(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
	return nil, nil
}

func ids(r *handlers.Registry) []string {
	var out []string
	for _, reg := range r.Registrations() {
		out = append(out, reg.Options.ID)
	}
	return out
}

func TestDefaultIDsAreReadableAndStable(t *testing.T) {
	r := handlers.NewRegistry()
	literal := func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil }
	handlers.OnCreate(r, createFn)
	handlers.OnCreate(r, widget{}.onCreate)
	handlers.OnCreate(r, literal)
	handlers.OnCreate(r, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil })
	handlers.OnCreate(r, literal, handlers.ID("explicit"))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(ids(r), ",")
	want := "createFn,onCreate,create_fn,create_fn_2,explicit"
	if got != want {
		t.Errorf("ids = %s, want %s", got, want)
	}
}

func TestLiteralIDsAreCountedPerKind(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil })
	handlers.OnCreate(r, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) { return nil, nil })
	if got := strings.Join(ids(r), ","); got != "create_fn,create_fn" {
		t.Errorf("ids = %s, want create_fn for each kind", got)
	}
}

func TestBadRegistrationsAreReportedWithTheHandlerAndPlace(t *testing.T) {
	noop := func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		return nil, nil
	}
	cases := map[string]struct {
		register func(*handlers.Registry)
		want     string
	}{
		"nil function": {
			func(r *handlers.Registry) { handlers.OnCreate[*corev1.Pod](r, nil, handlers.ID("nil_fn")) },
			`"nil_fn"`,
		},
		"unstructured without a kind": {
			func(r *handlers.Registry) { handlers.OnCreate(r, noop) },
			"needs ForKind or ForResource",
		},
		"unstructured with kind and resource": {
			func(r *handlers.Registry) {
				handlers.OnCreate(r, noop, handlers.ForKind("", "v1", "Pod"), handlers.ForResource("pods"))
			},
			"not both",
		},
		"typed with a kind": {
			func(r *handlers.Registry) { handlers.OnCreate(r, createFn, handlers.ForResource("pods")) },
			"only for unstructured handlers",
		},
		"kind without version": {
			func(r *handlers.Registry) { handlers.OnCreate(r, noop, handlers.ForKind("apps", "", "Deployment")) },
			"needs a version and a kind",
		},
		"duplicate id": {
			func(r *handlers.Registry) {
				handlers.OnCreate(r, createFn, handlers.ID("same"))
				handlers.OnCreate(r, createFn, handlers.ID("same"))
			},
			`id "same" is already used`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := handlers.NewRegistry()
			tc.register(r)
			err := r.Err()
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range []string{tc.want, "registry_test.go:"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestSameIDOnDifferentKindsIsAllowed(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, createFn, handlers.ID("x"))
	handlers.OnCreate(r, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) { return nil, nil }, handlers.ID("x"))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsMergeInOrder(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, createFn, handlers.Options{ID: "first", Param: 1}, handlers.ID("second"))
	reg := r.Registrations()[0]
	if reg.Options.ID != "second" || reg.Options.Param != 1 {
		t.Errorf("options = %+v, want id second and param 1", reg.Options)
	}
}

func TestCallHandsTheTypedObjectToTheHandler(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		return pod.Name, nil
	})
	reg := r.Registrations()[0]
	obj := reg.NewObject()
	obj.SetName("p1")
	got, err := reg.Call(context.Background(), obj, &handlers.Cause{})
	if err != nil || got != "p1" {
		t.Errorf("Call = %v, %v; want p1", got, err)
	}
	if _, err := reg.Call(context.Background(), &corev1.ConfigMap{}, &handlers.Cause{}); err == nil {
		t.Error("Call with the wrong type did not fail")
	}
}

func genericFn[T any](ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
	return nil, nil
}

func TestGenericFunctionsAreNamedWithoutTheirTypeArguments(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, genericFn[int])
	if got := ids(r); len(got) != 1 || got[0] != "genericFn" {
		t.Errorf("ids = %v, want [genericFn]", got)
	}
}
