// Package outside finds the objects of a kind that left a narrowed cache
// while gopf still holds them by its finalizer. When every handler of a
// kind selects objects by labels, the operator's cache watches only the
// objects those labels select; an object whose labels leave the selector
// then vanishes from the cache as if deleted, yet still carries the
// finalizer gopf answers for, which must be released as when in-memory
// filters stop matching. A Finder reads such an object from the API server
// when the cache no longer shows it (Read), and, once per start, lists the
// objects that left while the operator was not running (Find).
//
// It costs one read per object gopf held when it left, one paginated list
// of metadata per narrowed kind and start, and nothing for a kind the cache
// holds whole. The engine (internal/engine) reconciles what it finds.
package outside
