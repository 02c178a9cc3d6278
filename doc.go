/*
Package gopf gives Go operators Kopf-style handlers on controller-runtime.

An operator author registers small functions — "on create of a KopfExample,
return a status value" — on a handlers.Registry, and gopf compiles them into
ordinary controller-runtime Reconcilers on a Manager. Handlers share the
manager's cache, client and webhook server with any hand-written
Reconcilers.

The registration API is package handlers; this package runs it: Main runs an
operator with the usual flags (kubebuilder's and Kopf's), MainWith does the
same with more settings, and SetupWithManager adds gopf's handlers to a
manager the caller already has. A complete operator:

	func main() {
		reg := handlers.NewRegistry()
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			c.Log.Info("created", "field", obj.Spec.Field)
			return map[string]any{"message": "hello world"}, nil
		})
		gopf.Main(reg, kopfv1.AddToScheme)
	}
*/
package gopf
