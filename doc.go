/*
Package gopf gives Go operators Kopf-style handlers on controller-runtime.

An operator author registers small functions — "on create of a KopfExample,
return a status value" — on a Registry, and gopf compiles them into ordinary
controller-runtime Reconcilers on a Manager. Handlers share the manager's
cache, client and webhook server with any hand-written Reconcilers.

This package is the one import the everyday path needs: it re-exports the
registration API of package handlers and adds Main, which runs an operator
with the usual flags, and SetupWithManager, which adds gopf's handlers to a
manager the caller already has.

A complete operator:

	func main() {
		reg := gopf.NewRegistry()
		gopf.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
			c.Log.Info("created", "field", obj.Spec.Field)
			return map[string]any{"message": "hello world"}, nil
		})
		gopf.Main(reg, kopfv1.AddToScheme)
	}
*/
package gopf
