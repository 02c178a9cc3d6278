package handlers

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Option configures one handler registration. Options is an Option itself,
// and so is each of the small helpers below (ID, WithParam, ForKind,
// ForResource): use whichever reads better.
type Option interface {
	// ApplyToHandler copies the option's non-zero settings into o.
	ApplyToHandler(o *Options)
}

// Options are the settings of one handler registration. The zero value of
// every field means "the default" as documented on the field.
type Options struct {
	// ID names the handler. It keys the handler's stored progress and the
	// place its result goes to (status.<ID>), so it should not change between
	// releases of an operator. Default: the Go name of a named function
	// (createFn for func createFn), or "<reason>_fn" for a function literal
	// (create_fn, update_fn, ...), with a suffix _2, _3, ... for the second
	// and later literals of the same reason and kind. Give literals an
	// explicit ID when their registration order may change.
	ID string

	// Param is handed to the handler as Cause.Param, so that one function can
	// be registered several times with different settings.
	Param any

	// Kind names the kind of unstructured objects the handler is for. Only
	// for handlers of *unstructured.Unstructured; typed handlers take their
	// kind from their Go type. Exactly one of Kind and Resource is needed for
	// unstructured handlers.
	Kind schema.GroupVersionKind

	// Resource names the kind of unstructured objects by resource name, as
	// kubectl takes it: "kopfexamples", "kopfexamples.kopf.dev" or
	// "kopfexamples.v1.kopf.dev" (plural or singular). It is resolved with the
	// manager's REST mapper at setup; a name that resolves to nothing is an
	// error then.
	Resource string
}

// ApplyToHandler implements Option: non-zero fields of o override those in
// target.
func (o Options) ApplyToHandler(target *Options) {
	if o.ID != "" {
		target.ID = o.ID
	}
	if o.Param != nil {
		target.Param = o.Param
	}
	if !o.Kind.Empty() {
		target.Kind = o.Kind
	}
	if o.Resource != "" {
		target.Resource = o.Resource
	}
}

// ID sets the handler's id; see Options.ID.
func ID(id string) Option { return Options{ID: id} }

// WithParam sets the value handed to the handler as Cause.Param.
func WithParam(param any) Option { return Options{Param: param} }

// ForKind names the kind of an unstructured handler by group, version and
// kind, e.g. ForKind("kopf.dev", "v1", "KopfExample"). Use "" as the group of
// core kinds.
func ForKind(group, version, kind string) Option {
	return Options{Kind: schema.GroupVersionKind{Group: group, Version: version, Kind: kind}}
}

// ForResource names the kind of an unstructured handler by resource name;
// see Options.Resource.
func ForResource(name string) Option { return Options{Resource: name} }
