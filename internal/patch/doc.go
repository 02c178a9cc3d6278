// Package patch sends gopf's writes of the objects of one kind: at most one
// patch of the object and one of its status per write, as JSON merge
// patches, or as a JSON patch guarded by the object's resourceVersion where
// a handler's patch transforms the object (Patch.Transform). gopf's own
// patches read back only the object's metadata, the API server's
// PartialObjectMetadata form, far cheaper to decode than the object, and
// copy it into the object, which is what gopf reads after a write.
//
// A Sender knows its kind (its group, version and kind, whether it has a
// status subresource, its REST mapping) and the client it writes through;
// it knows nothing of handlers, state or the engine (internal/engine),
// which decides what to write.
package patch
