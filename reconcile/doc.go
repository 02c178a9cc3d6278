/*
Package reconcile is the public face of gopf's engine: Setup compiles the
handler registrations of a handlers.Registry into controller-runtime
Reconcilers on a Manager, as Options say. The engine itself lives under
internal/ (engine, operator, state, kopfstate, spawn, peering); it reads the
registrations through the engine contract (internal/spec): each handler has
an explicit kind, resolved options and a function to call. This page says
what it does; package reconcile/rbac says what it needs.

# One controller per kind

Setup groups the registrations by the kind they watch and adds one controller
per kind (named gopf-<kind>.<group>, MaxConcurrentReconciles 16 by default:
many objects at once, one reconcile per object at a time). Each Reconcile
reads the object from the manager's informer cache — never from the API
server — and:

 1. selects the handlers whose labels, annotations, field value (Value) and
    When filters accept the object. An object no handler selects is left alone completely: no
    finalizer, no stored state, no log line. When it starts matching later it
    has no stored state and is handled as created.
 2. keeps the finalizer <prefix>/finalizer on it exactly while something
    needs it: a non-optional delete handler that selects it, or a selected
    timer or daemon that has not finished for good. The finalizer is added
    (and persisted) before any create handler runs, with a merge patch
    guarded by resourceVersion, so other controllers' finalizers are never
    clobbered. (A DELETE already under way when it is added may still
    remove the object: an API server race, kubernetes/kubernetes#77988.)
    Adding it is the whole reconcile, as in Kopf: the handlers run in the
    next one, which the finalizer's own watch event brings, so that their
    write never reaches an API server whose watch cache has not seen the
    finalizer's (the API server would apply it twice).
 3. computes the essence (everything but status and most metadata; labels and
    annotations kept minus gopf's own and kubectl's last-applied
    configuration; field paths handlers name, such as status.phase, kept) and
    compares it with the stored last-handled essence to find the cause:
    create (nothing stored), update (the essence differs; handlers receive
    the diff), delete (deletion started and the finalizer is present), resume
    (first sight in this process of a handled object; mixed into an update
    when the object changed while the operator was down).
 4. runs every due handler of the cause in registration order, then their
    sub-handlers, then the OnReconcile (level) handlers, and writes results
    and state.

# Writes

A reconcile writes the finalizer alone when the finalizer comes, and
otherwise at most one status patch and one object patch (plus the
finalizer's write when the finalizer goes). The finalizer's write is a
merge patch, or, on unstructured objects, which hold every field the API
server sent, an update of the whole object, which costs the API server
less (it needs update on the kind; without it gopf patches, after one
warning). Results are written only
when they change what status holds; state only when it changed. Results the
kind's status cannot keep (see below) are not sent at all. Idle objects
and resyncs cost nothing. In Kopf's create/update/delete scenario (one
handler each, returning a value) gopf writes 2 requests per create
(finalizer; results with state), 1 per update and 1 per delete. A handler
that keeps failing temporarily costs a write on its 1st, 2nd, 4th, 8th, ...
attempt and whenever its error message changes (the attempts between are
counted in memory and stored with the next write), or one per attempt when
it has a Retries or Timeout limit, which must hold across restarts; retries
are scheduled with RequeueAfter, never by touching the object. Where gopf's webhook server runs
(see webhook.Options.Finalizers), it adds the finalizer as the object is
created, and a create costs one write: 1/1/1, fewer than a hand-written
reconciler that adds its finalizer with a write of its own.

# Where state lives

The default (StorageAuto) keeps the state in the object's status
(status.gopf: lastHandled, the essence as JSON, and progress, the records of
unfinished handlers) when the kind's status can keep it, so that results and
state go out in one request; that is what makes the budget above possible.
Other kinds keep it in annotations (<prefix>/last-handled-configuration and
<prefix>/progress). Which one is decided per kind when its controller is set
up, before its first write, and is the same at every start: status when the
kind has a status subresource, the API server keeps status.gopf (a CRD whose
schema declares it, or keeps unknown fields there with
x-kubernetes-preserve-unknown-fields; built-in kinds such as Pods and
Namespaces do not) and, for typed handlers, the Go type has room for it (a
typed status as kubebuilder scaffolds it has not). Setup reads the kind's
CustomResourceDefinition for that (get on customresourcedefinitions); when
it cannot, it goes by the Go type, and if the API server then drops the
state anyway (a CRD changed while the operator runs) the kind moves to
annotations, with one warning for the kind that says what dropped it.

Loading reads every place gopf may have written — its chosen place, its
other place, then the state of a Kopf operator gopf takes over from — and
uses the first that holds readable state, so an object keeps its history
when its kind's place changes (state an older gopf kept in annotations, a
CRD whose schema changed, another Storage option). The next write of the
state puts it in the chosen place and removes the other copies: a copy in
annotations in that write, a copy in status in the write after (the status
patch goes first, and the state must never be nowhere).

Results go to status.<handler id>. Where the kind's status cannot keep a
handler's results (a typed status that does not declare the field, a
built-in kind), they are not sent, and a warning, once per kind and
handler, names the field to declare in the CRD and the Go type. On such a
kind a create without a finalizer costs one write: the state's annotations.

# Large objects

gopf knows the size limits: 256 KiB of annotations, and about 1.5 MiB per
object (etcd's default request limit). When a full copy of the essence
would not fit (an object whose spec is most of the limit), the state keeps
a compact form instead: a digest of the essence plus the fields handlers
name (Field options). While an object's state is compact, Old and New hold
just those fields and a "$gopf" entry with the digest, and Diff lists the
changes of those fields plus changes under "$gopf" when anything else
changed; handlers read the rest from the object itself. A handler result
that cannot fit on the object is the handler's permanent failure, reported
with a HandlerFailed Warning Event. A write the API server refuses as too
large anyway gets one TooLarge Warning Event and is not retried until the
object changes. Nothing is truncated.

# Events

gopf posts core/v1 Events, as Kopf does: every type the API server takes
(a handler's own types besides Normal and Warning), each distinct message
an Event of its own, and a true repeat (the same object, type, reason and
message within 10 minutes) counted on the Event it repeats rather than
posted again. Posting never blocks a handler: Events wait in a queue of
1,024 and one worker per operator posts them; a full queue drops them, with a
warning in the log. Options.EventsOff posts none.

State in status is lost by tools that replace status wholesale or by backups
that do not restore it; the object then looks new and its create handlers
run again, so create handlers should be idempotent, as in Kopf.

# Retries and errors

One policy decides, for every handler kind that has one, what an attempt's
result means (see judge in policy.go): change handlers, sub-handlers,
timers, daemons, startup and cleanup handlers. A nil error succeeds. A
TemporaryError retries after its delay; other errors after the handler's
Backoff (default Options.DefaultBackoff, 60 s) unless the handler's error
mode says permanent or ignored; a PermanentError, or running out of Retries
or Timeout, records a failure (a log line and a HandlerFailed Warning
Event). Panics are recovered in one place (spec.Protect) and count as
errors. For change handlers the progress records (retries, first attempt,
next attempt, outcome, last message) are stored, so an operator restart
continues the count; a cause is complete when every selected handler has
succeeded or failed, and then the essence is stored and the progress
removed. A timer counts the attempts of one run, a daemon those of its
starts; a timer or daemon that fails for good stops for that object in this
process (as in Kopf) and no longer holds the finalizer. A startup handler
that fails for good stops the operator. Event and index handlers are never
retried (their errors are logged), probes are called again by the next
health check, and OnReconcile errors requeue the object with
controller-runtime's rate limiter.

# Failed writes

A write that fails (a 500, a conflict, a timeout) after handlers ran keeps
their outcome in memory: the state, their results and their own patch
(Cause.Patch: labels, spec, SetStatus, Transform), which the state
describes. The next reconcile of the object sends all of it again, on the
object as it is then, before anything else, and calls no handler for it;
the reconcile after that goes on from the stored state. The state is never
stored without the patch it describes, so a handler's own change is never
taken for an update.

# Decisions where Kopf's behaviour was not kept

A change that arrives while an update handler is still retrying is not hidden
from handlers that already succeeded: each update handler remembers the
essence it succeeded for and is called again with just the newer change,
while the retrying handler's next attempt sees all changes since the
last-handled essence. It does with StorageKopf too: its record in Kopf's
format carries that essence, in a field Kopf does not read. Deletion
supersedes unfinished create and update handlers: they are dropped (with a
log line) and the delete handlers run. Results of delete handlers are not
written: the object is going away.

# Bad stored state

Stored state that cannot be read (hand-edited, truncated, foreign) is logged,
reported once per object and process with a BadStoredState Warning Event, and
passed over: readable state in another place (gopf's other place, or the
state of the Kopf operator gopf takes over from) is used instead; with none,
the object is handled as new, which runs its create handlers again rather
than silently skipping a handler. Either way the reconcile that finds it
writes the state, even when nothing else changed (one patch, and one more
for a kind with a status subresource whose copy in annotations goes): the
unreadable value is replaced and the copies elsewhere are removed, so a
restart finds nothing to report.
*/
package reconcile

// What the engine itself needs besides the watched kinds: posting Events and
// taking part in peering.
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfpeerings;clusterkopfpeerings,verbs=get;list;watch;patch
