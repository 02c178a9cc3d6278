/*
Package handlers is gopf's registration API: the handler kinds an operator
author registers, their options and filters, the per-call Cause a handler
receives, and the error types a handler returns to steer retries.

A Registry collects registrations. Nothing runs at registration time: the
reconcile package later compiles a Registry into controller-runtime
Reconcilers on a Manager (package gopf's Main and SetupWithManager do that).

Each registration function takes the options of its own handler kind
(CreateOption for OnCreate, TimerOption for OnTimer, ...; the doc of each
lists the options it accepts), as controller-runtime's builder does, so an
option a kind does not honour does not compile there: OnStartup(reg, fn, Sharp()) is a compile error. What the
compiler cannot check (a Value without a Field, Retries(0), a duplicate id, a
nil function) makes the registration bad: it is recorded and reported,
naming the option problem, the handler and the file:line of its
registration, by Registry.Err and by whatever sets the registry up.

Typed objects are registered through generics, so a handler receives the Go
type it declared and never needs a type assertion:

	handlers.OnCreate(reg, func(ctx context.Context, obj *v1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": "hello world"}, nil
	})

Anything without a Go type is registered as *unstructured.Unstructured with a
ForKind or ForResource option naming it.

The helpers a handler uses on objects apart from registration (adopting
children, reading fields of objects without Go types, patching other
objects) are in package handlers/objects.

This package depends only on gopf's internal engine contract; the engine
depends on it.
*/
package handlers
