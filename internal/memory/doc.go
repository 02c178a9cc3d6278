// Package memory is what one operator process remembers of each object
// between reconciles (Memory): the object's memo, its last write (so that a
// reconcile waits for the cache to show it), a failed write to send again
// (Unsaved), and warnings already given. Nothing here is stored on the
// object; a restart forgets it, by design.
package memory
