/*
Package handlers is gopf's registration API: the handler kinds an operator
author registers, their options and filters, the per-call Cause a handler
receives, and the error types a handler returns to steer retries.

A Registry collects registrations. Nothing runs at registration time: the
reconcile package later compiles a Registry into controller-runtime
Reconcilers on a Manager. Registration never fails loudly; a bad registration
(a nil function, a malformed option, a duplicate id) is recorded and reported,
naming the handler, by Registry.Err and by whatever sets the registry up.

Typed objects are registered through generics, so a handler receives the Go
type it declared and never needs a type assertion:

	handlers.OnCreate(reg, func(ctx context.Context, obj *v1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": "hello world"}, nil
	})

Anything without a Go type is registered as *unstructured.Unstructured with a
ForKind or ForResource option naming it.

This package depends on no other gopf package; the engine depends on it.
*/
package handlers
