// Command filtering shows how handlers select the objects they are for, as
// Kopf's 11-filtering-handlers example does: by labels and annotations
// (exact values, handlers.Present, handlers.Absent, or a function of the value), by a
// predicate on
// the whole object (handlers.When), and by a field's value (handlers.Field with
// handlers.Value, or OnUpdate with handlers.OldValue and handlers.NewValue).
//
// Objects that no handler selects are left alone entirely: no finalizer, no
// stored state, no log line. When an object starts to match later, it is
// handled as created.
package main

import (
	"context"
	"strings"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

// matched is what every create handler here returns, so status shows which
// handlers selected the object.
func matched(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"matched": true}, nil
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()

	// Labels and annotations: every entry must match.
	handlers.OnCreate(reg, matched, handlers.ID("label_value"), handlers.Labels{"somelabel": "somevalue"})
	handlers.OnCreate(reg, matched, handlers.ID("label_present"), handlers.Labels{"somelabel": handlers.Present})
	handlers.OnCreate(reg, matched, handlers.ID("label_absent_too"), handlers.Labels{"somelabel": handlers.Present, "paused": handlers.Absent})
	handlers.OnCreate(reg, matched, handlers.ID("label_func"), handlers.Labels{"somelabel": func(v string) bool { return strings.HasPrefix(v, "some") }})
	handlers.OnCreate(reg, matched, handlers.ID("annotation_value"), handlers.Annotations{"someannotation": "somevalue"})
	handlers.OnCreate(reg, matched, handlers.ID("annotation_func"), handlers.Annotations{"someannotation": func(v any) bool { return v != nil }})

	// A predicate on the whole object, in its Go type.
	handlers.OnCreate(reg, matched, handlers.ID("when_items"), handlers.When(func(obj *kopfv1.KopfExample, _ *handlers.Cause) bool {
		return len(obj.Spec.Items) > 1
	}))

	// Field values say when a handler runs; labels, annotations and When say
	// which objects gopf looks after at all. Without a label filter, the two
	// handlers below would select every object, and gopf would keep every
	// object's last-handled state, to tell whether the field changed.

	// A field's value: on create, the new value must match.
	handlers.OnCreate(reg, matched, handlers.ID("field_value"),
		handlers.Field("spec.field"), handlers.Value("value"), handlers.Labels{"somelabel": handlers.Present})

	// Only a change of spec.field from "value" to "changed".
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"from": c.Old, "to": c.New}, nil
	}, handlers.ID("field_value_to_changed"),
		handlers.Field("spec.field"), handlers.OldValue("value"), handlers.NewValue("changed"), handlers.Labels{"somelabel": handlers.Present})

	// A delete handler with a filter: only labelled objects get gopf's
	// finalizer.
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Log.Info("a labelled object is going")
		return nil, nil
	}, handlers.ID("delete_labelled"), handlers.Labels{"somelabel": handlers.Present})
	return reg
}
