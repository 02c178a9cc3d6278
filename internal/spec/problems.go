package spec

import "fmt"

// Problems checks a handler's options against each other and its kind,
// as far as the option types of package handlers did not already: what
// registering it reports.
func (h *Handler[C]) Problems() []string {
	o := h.Options
	var problems []string
	if h.Kind.Resource() {
		problems = append(problems, h.objectProblems()...)
	}
	problems = append(problems, fieldProblems(o)...)
	if h.Kind == KindTimer {
		problems = append(problems, timerProblems(o)...)
	}
	if h.Kind == KindIndex && o.ID == "" {
		problems = append(problems, "an index needs a name")
	}
	return problems
}

// objectProblems checks how a handler of objects says which objects it is
// for: its Go type, or for an unstructured handler its kind, resource or
// kind selector.
func (h *Handler[C]) objectProblems() []string {
	o := h.Options
	var problems []string
	if h.NewObject() == nil {
		problems = append(problems, "the object type must be a non-nil pointer type such as *v1.Pod")
	}
	hasKind, hasResource, hasKinds := !o.GVK.Empty(), o.Resource != "", o.Kinds != nil
	switch {
	case h.Unstructured:
		problems = append(problems, h.unstructuredProblems(hasKind, hasResource, hasKinds)...)
	case hasKind || hasResource:
		problems = append(problems, "ForKind and ForResource are only for unstructured handlers; a typed handler's kind comes from its Go type")
	case hasKinds:
		problems = append(problems, "ForCategory and ForKinds are only for unstructured handlers: a typed handler's kind comes from its Go type, and objects of several kinds arrive as *unstructured.Unstructured")
	}
	if hasKind && (o.GVK.Version == "" || o.GVK.Kind == "") {
		problems = append(problems, fmt.Sprintf("kind %q needs a version and a kind", o.GVK))
	}
	return problems
}

// unstructuredProblems checks that an unstructured handler names its
// objects one way: a kind or a resource, or (for handlers that may serve
// several kinds) a kind selector.
func (h *Handler[C]) unstructuredProblems(hasKind, hasResource, hasKinds bool) []string {
	switch {
	case !hasKind && !hasResource && !hasKinds:
		if h.Kind.Admission() || h.Kind == KindIndex {
			return []string{"an unstructured handler needs ForKind or ForResource to say which objects it is for"}
		}
		return []string{"an unstructured handler needs ForKind or ForResource to say which objects it is for, or ForCategory or ForKinds for several kinds"}
	case hasKind && hasResource:
		return []string{"give ForKind or ForResource, not both"}
	case hasKinds && (hasKind || hasResource):
		return []string{"give ForKind or ForResource, or ForCategory or ForKinds, not both"}
	}
	return nil
}

// fieldProblems checks that value filters come with the field they filter,
// and that a handler filters on one value or on the change of one.
func fieldProblems(o Options) []string {
	var problems []string
	if len(o.Field) == 0 && (o.Value != nil || o.Old != nil || o.New != nil) {
		problems = append(problems, "Value, OldValue and NewValue need a Field")
	}
	if o.Value != nil && (o.Old != nil || o.New != nil) {
		problems = append(problems, "give Value, or OldValue/NewValue, not both")
	}
	return problems
}

// timerProblems checks that a timer has a way to fire: a positive
// interval, or an Idle delay without Sharp.
func timerProblems(o Options) []string {
	switch {
	case o.Interval < 0:
		return []string{"a timer's interval cannot be negative"}
	case o.Interval == 0 && o.Idle <= 0:
		return []string{"a timer needs a positive interval or Idle"}
	case o.Interval == 0 && o.Sharp:
		return []string{"Sharp needs a positive interval"}
	}
	return nil
}
