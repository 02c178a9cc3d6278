package handlers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
)

func createFn(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil }

type widget struct{}

func (widget) onCreate(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
	return nil, nil
}

func ids(r *handlers.Registry) []string {
	var out []string
	for _, h := range handlers.HandlersOf(r) {
		out = append(out, h.Options.ID)
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

func TestSameIDOnDifferentKindsIsAllowed(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, createFn, handlers.ID("x"))
	handlers.OnCreate(r, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) { return nil, nil }, handlers.ID("x"))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsApplyInOrderAndTheLastOfASettingWins(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, createFn, handlers.ID("first"), handlers.WithParam(1), handlers.ID("second"))
	h := handlers.HandlersOf(r)[0]
	if h.Options.ID != "second" || h.Options.Param != 1 {
		t.Errorf("options = %+v, want id second and param 1", h.Options)
	}
}

func TestCallHandsTheTypedObjectToTheHandler(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		return pod.Name, nil
	})
	h := handlers.HandlersOf(r)[0]
	obj := h.NewObject()
	obj.SetName("p1")
	got, err := h.Call(context.Background(), obj, &handlers.Cause{})
	if err != nil || got != "p1" {
		t.Errorf("Call = %v, %v; want p1", got, err)
	}
	if _, err := h.Call(context.Background(), &corev1.ConfigMap{}, &handlers.Cause{}); err == nil {
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

func TestTheZeroRegistryIsReady(t *testing.T) {
	var reg handlers.Registry
	handlers.OnCreate(&reg, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		c.Info("Seen", "pod %s", pod.Name)
		return nil, nil
	})
	if err := reg.Err(); err != nil || len(handlers.HandlersOf(&reg)) != 1 {
		t.Fatalf("err = %v, handlers = %d", err, len(handlers.HandlersOf(&reg)))
	}
	posted := 0
	c := handlers.CauseWith(&reg, "create_fn", &handlers.Extras{Post: func(string, string, string) { posted++ }})
	if _, err := handlers.HandlersOf(&reg)[0].Call(context.Background(), &corev1.Pod{}, c); err != nil || posted != 1 {
		t.Fatalf("call: err = %v, events posted = %d", err, posted)
	}
}

func TestTimerSchedulesThatCannotWorkAreBadRegistrations(t *testing.T) {
	fn := func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil }
	for want, register := range map[string]func(*handlers.Registry){
		"interval cannot be negative":     func(r *handlers.Registry) { handlers.OnTimer(r, -time.Second, fn, handlers.Idle(time.Second)) },
		"Sharp needs a positive interval": func(r *handlers.Registry) { handlers.OnTimer(r, 0, fn, handlers.Idle(time.Second), handlers.Sharp()) },
	} {
		r := handlers.NewRegistry()
		register(r)
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one saying %q", err, want)
		}
	}
}

// Kopf's @kopf.on.resume, @kopf.on.create and @kopf.on.update stacked on one
// function share its id; so do gopf's registrations of those kinds.
func TestStackedResumeCreateAndUpdateRegistrationsShareOneID(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnResume(r, createFn)
	handlers.OnCreate(r, createFn)
	handlers.OnUpdate(r, createFn)
	handlers.OnResume(r, createFn, handlers.ID("named"))
	handlers.OnCreate(r, createFn, handlers.ID("named"))
	if err := r.Err(); err != nil {
		t.Fatalf("stacked registrations: %v", err)
	}
	if got := strings.Join(ids(r), " "); got != "createFn createFn createFn named named" {
		t.Errorf("ids = %s, want createFn three times and named twice", got)
	}
}

func TestSharedIDsThatCanRunForOneCauseAreBadRegistrations(t *testing.T) {
	cases := map[string]func(r *handlers.Registry){
		"two create handlers": func(r *handlers.Registry) { handlers.OnCreate(r, createFn) },
		"an update after the stacked three": func(r *handlers.Registry) {
			handlers.OnUpdate(r, createFn, handlers.ID("createFn"), handlers.Field("spec.hostname"))
		},
		"a field handler":  func(r *handlers.Registry) { handlers.OnField(r, "spec.a", createFn, handlers.ID("createFn")) },
		"a delete handler": func(r *handlers.Registry) { handlers.OnDelete(r, createFn) },
		"a timer":          func(r *handlers.Registry) { handlers.OnTimer(r, time.Minute, createFn) },
	}
	for name, register := range cases {
		t.Run(name, func(t *testing.T) {
			r := handlers.NewRegistry()
			handlers.OnResume(r, createFn)
			handlers.OnCreate(r, createFn)
			handlers.OnUpdate(r, createFn)
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			register(r)
			err := r.Err()
			if err == nil || !strings.Contains(err.Error(), `id "createFn" is already used by the `) ||
				!strings.Contains(err.Error(), "only one resume, one create and one update handler may share an id") {
				t.Fatalf("error = %v, want one saying the id is taken and which kinds may share one", err)
			}
		})
	}
}
