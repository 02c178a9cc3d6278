/*
Package reconcile is gopf's engine: it compiles the handler registrations of a
handlers.Registry into controller-runtime Reconcilers on a Manager.

There is one controller per watched kind. Each Reconcile reads the object from
the manager's informer cache, computes its essence (what change handlers care
about: everything but status and most metadata; labels and annotations kept,
minus gopf's own and kubectl's last-applied configuration), compares it with
the last-handled essence stored on the object, and derives the cause. It then
runs the matching handlers, merges their results into status.<handler-id>,
and writes the results and the new stored state back in one request.

Reads never go to the API server: the engine reads through the manager's
cache (which caches unstructured objects too). A reconcile that changes
nothing writes nothing, so idle objects and resyncs cost no requests.

Where the last-handled state is stored is a Storage. The default stores it in
the object's status (status.gopf) when the kind has a status subresource, so
that results and state go out in the same request, and in annotations
(gopf.dev/...) otherwise. If the API server prunes status.gopf (a CRD whose
status schema does not keep unknown fields), the engine notices from the
response, logs a warning, and keeps the state of that kind in annotations from
then on.
*/
package reconcile
