// Command filtering shows how handlers select the objects they are for, as
// Kopf's 11-filtering-handlers example does: by labels and annotations
// (exact values, gopf.Present, gopf.Absent, or a function of the value), by a
// predicate on
// the whole object (gopf.When), and by a field's value (gopf.Field with
// gopf.Value, or OnUpdate with gopf.OldValue and gopf.NewValue).
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
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

// matched is what every create handler here returns, so status shows which
// handlers selected the object.
func matched(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
	return map[string]any{"matched": true}, nil
}

func registry() *gopf.Registry {
	reg := gopf.NewRegistry()

	// Labels and annotations: every entry must match.
	gopf.OnCreate(reg, matched, gopf.ID("label_value"), gopf.Labels{"somelabel": "somevalue"})
	gopf.OnCreate(reg, matched, gopf.ID("label_present"), gopf.Labels{"somelabel": gopf.Present})
	gopf.OnCreate(reg, matched, gopf.ID("label_absent_too"), gopf.Labels{"somelabel": gopf.Present, "paused": gopf.Absent})
	gopf.OnCreate(reg, matched, gopf.ID("label_func"), gopf.Labels{"somelabel": func(v string) bool { return strings.HasPrefix(v, "some") }})
	gopf.OnCreate(reg, matched, gopf.ID("annotation_value"), gopf.Annotations{"someannotation": "somevalue"})
	gopf.OnCreate(reg, matched, gopf.ID("annotation_func"), gopf.Annotations{"someannotation": func(v any) bool { return v != nil }})

	// A predicate on the whole object, in its Go type.
	gopf.OnCreate(reg, matched, gopf.ID("when_items"), gopf.When(func(obj *kopfv1.KopfExample) bool { return len(obj.Spec.Items) > 1 }))

	// Field values say when a handler runs; labels, annotations and When say
	// which objects gopf looks after at all. Without a label filter, the two
	// handlers below would select every object, and gopf would keep every
	// object's last-handled state, to tell whether the field changed.

	// A field's value: on create, the new value must match.
	gopf.OnCreate(reg, matched, gopf.ID("field_value"),
		gopf.Field("spec.field"), gopf.Value("value"), gopf.Labels{"somelabel": gopf.Present})

	// Only a change of spec.field from "value" to "changed".
	gopf.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
		return map[string]any{"from": c.Old, "to": c.New}, nil
	}, gopf.ID("field_value_to_changed"),
		gopf.Field("spec.field"), gopf.OldValue("value"), gopf.NewValue("changed"), gopf.Labels{"somelabel": gopf.Present})

	// A delete handler with a filter: only labelled objects get gopf's
	// finalizer.
	gopf.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
		c.Log.Info("a labelled object is going")
		return nil, nil
	}, gopf.ID("delete_labelled"), gopf.Labels{"somelabel": gopf.Present})
	return reg
}
