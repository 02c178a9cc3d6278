// Package peering lets operators that serve the same objects take turns
// through Kopf's peering objects (KopfPeering, ClusterKopfPeering): each
// announces itself with a priority and a lifetime, the highest live
// priority works, and the others pause (Peering, started by the engine with
// a host to pause and resume). Freeze and Unfreeze write the entry of a
// peer that only pauses the others, as `kopf freeze` does. It reads and
// writes peering objects in Kopf's format, so gopf and Kopf operators can
// share one.
package peering
