// Package decide works out what one reconcile does with an object, without
// calling or writing anything: the route it takes (live, deleted, held by
// others, or none of gopf's business), the step gopf's finalizer needs, the
// cause (create, update, delete, resume) and the handlers that run for it,
// each with the old and new values and the diff it sees and the progress
// record it continues.
//
// Its input is plain: an object's metadata and essence, what gopf knows of
// it (the stored state, or a newer one not yet written), the registrations
// whose filters accept it (Selects applies a handler's filters), the
// finalizers gopf answers for and what the process remembers of the object.
// So the engine (internal/engine), which carries a Decision out, and the
// planner (internal/plan), which renders the decision of a starting
// operator, cannot disagree; and the policy reads in one place, as Kopf's
// cause detection does.
//
// decide knows nothing of the engine, the API server or the storages.
package decide
