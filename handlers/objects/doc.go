/*
Package objects holds the helpers a handler uses on objects other than
through its registration: making children belong to their owner, reading
fields of objects without Go types, and patching objects other than the
one being handled. Nothing here registers anything or talks to the API
server; the helpers change objects in memory, or build a patch that the
handler sends with its client.

Ownership is Kopf's hierarchies kit (kopf.adopt and its building blocks):
Adopt gives a child a controller owner reference, its owner's namespace, a
name after its owner and its owner's labels, so that the garbage collector
deletes the child with its owner; Label, HarmonizeNaming, AdjustNamespace,
AppendOwnerReference and RemoveOwnerReference do one of those steps each,
and OwnerReference and ObjectReference build the references themselves.
The options Forced, Strict, Nested, NotController and NoBlockOwnerDeletion
are Kopf's forced=, strict=, nested=, controller= and
block_owner_deletion=; each helper's option interface (AdoptOption,
LabelOption, ...) says which it takes.

	child := &corev1.ConfigMap{Data: map[string]string{"greeting": "hello"}}
	if err := objects.Adopt(owner, child); err != nil {
		return nil, err
	}
	err := c.Client.Create(ctx, child)

Decode reads a field of an unstructured object, of Cause.Old or Cause.New,
or of a stored result into a Go value; ChildPatch is a merge patch built
field by field, for an object the handler does not handle, as Cause.Patch
is for the one it does.

This package depends on handlers (for FieldPath) and on nothing else of
gopf; the engine does not depend on it.
*/
package objects
