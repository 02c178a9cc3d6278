// Package spawn runs the timers and daemons of one kind's objects (Spawner):
// timers on a bounded pool of workers fed by one queue of due times, daemons in a
// goroutine each, both started and stopped as reconciles say which objects
// want them (Sync, Stop, Forget) and as the operator pauses. It calls
// handlers and writes their outcome through the kind's controller (Kind),
// and knows nothing else of the engine.
package spawn
