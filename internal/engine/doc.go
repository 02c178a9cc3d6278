// Package engine is gopf's reconcile engine: one controller-runtime
// controller per watched kind (KindController) whose Reconcile loads the
// object's stored state, decides what to do (internal/decide, a pure
// function of the object, its state, the selected registrations and the
// process's memory), runs the handlers that are due (turn) and writes the
// outcome in one request (write, sent by internal/patch, within the size
// budget of internal/objsize). Around it: the operator-level handlers and
// the objects that left a narrowed cache (internal/outside). Timers and
// daemons run in internal/spawn, peering in internal/peering;
// internal/plan renders the same decision for `status` and `plan` without
// acting on it, through Describe and Inspect.
//
// The public face is package reconcile (Options, Setup); how the engine
// works, step by step, is described there. The stored state's format is
// internal/state's and internal/kopfstate's, which know nothing of the
// engine.
package engine
