package reconcile

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/operator"
)

// Storage says where gopf keeps its per-object state.
type Storage int

const (
	// StorageAuto keeps the state in status.<StatusField> when the kind has
	// a status subresource and its status keeps that field: the API server
	// (the CRD's schema declares it or keeps unknown fields there; built-in
	// kinds do not) and, for typed handlers, the Go type. Results and state
	// then cost one request together. Other kinds keep it in annotations.
	// Decided per kind at setup; see chooseStorage. The default.
	StorageAuto Storage = iota
	// StorageStatus always keeps the state in status.<StatusField>. Setup
	// fails for a kind whose status cannot keep it.
	StorageStatus
	// StorageAnnotations always keeps the state in annotations under
	// Prefix; results still go to status, so a create costs one more write.
	StorageAnnotations
	// StorageKopf keeps the state as a Kopf operator does: Kopf's
	// annotations under KopfPrefix, in Kopf's format, and KopfFinalizer as
	// the finalizer. A team that moves to gopf runs in this mode until it
	// no longer needs to roll back: the Kopf operator, started again,
	// re-runs nothing that gopf did. Results go to status.<handler id>, as
	// Kopf's do.
	StorageKopf
)

// Kopf's defaults for what it keeps on objects (Kopf's
// settings.persistence): the prefix of its annotations and its finalizer.
const (
	// DefaultKopfPrefix is the prefix of the annotations of a Kopf operator
	// with default settings.
	DefaultKopfPrefix = "kopf.zalando.org"
	// DefaultKopfFinalizer is the finalizer of a Kopf operator with default
	// settings.
	DefaultKopfFinalizer = "kopf.zalando.org/KopfFinalizerMarker"
)

// Options configure how a registry is compiled onto a manager. The zero
// value is ready to use.
type Options struct {
	// MaxConcurrentReconciles is how many objects of one kind are handled at
	// once. One object is never handled by two reconciles at once.
	// Default: 16 (controller-runtime's own default is 1, which makes one slow
	// handler stall every other object of its kind).
	MaxConcurrentReconciles int

	// Prefix is the prefix of gopf's annotations (and, later, finalizer).
	// Default: "gopf.dev".
	Prefix string

	// StatusField is the field under status where gopf keeps its state for
	// kinds with a status subresource. Default: "gopf".
	StatusField string

	// Storage says where the state is kept. Default: StorageAuto.
	Storage Storage

	// KopfPrefix is the annotation prefix of the Kopf operator this one
	// takes over from (the prefix of Kopf's progress and diff-base
	// storages). An object that carries no readable state of gopf's is
	// handled from the state that operator left (state of gopf's that
	// cannot be read is still reported, see the package documentation):
	// an object Kopf handled is not handled
	// again, an unfinished cause continues with Kopf's retry counts and
	// delays. With StorageKopf, gopf keeps its state there. Default:
	// DefaultKopfPrefix.
	KopfPrefix string

	// KopfFinalizer is that Kopf operator's finalizer (Kopf's
	// settings.persistence.finalizer). gopf counts it as its own: it adds
	// none of its own to an object that has it, and removes it, with its
	// own, once the object's delete handlers are done; never earlier.
	// Default: DefaultKopfFinalizer.
	KopfFinalizer string

	// DefaultBackoff is the delay before retrying a handler after an error
	// that did not say how long to wait, unless the handler sets its own
	// Backoff. Default: 60 s, as in Kopf.
	DefaultBackoff time.Duration

	// LogEvents posts handler log lines as Events. Default: LogEventsOff.
	LogEvents LogEvents

	// EventsOff turns off every Event gopf posts, as Kopf's
	// posting.enabled = False: those handlers post (Cause.Post, Info, Warn,
	// Exception, PostAbout), the LogEvents bridge, and gopf's own
	// (HandlerFailed, StateTooLarge, BadStoredState). Default: false.
	EventsOff bool

	// EventComponent is the reporting component (reportingController) of
	// the Events gopf posts, Kopf's posting.reporting_component. client-go
	// derives the reporting instance from it as <component>-<hostname>;
	// there is no separate setting for it. Default: "gopf".
	EventComponent string

	// Memo is the operator memo's starting content: operator-level handlers
	// (OnStartup, OnCleanup, OnProbe) see it, startup handlers add to it,
	// and every object's memo starts as a shallow copy of it, taken when the
	// object is first seen after the startup handlers finished.
	Memo map[string]any

	// Namespaces limits the operator to namespaces matching these patterns:
	// plain names, globs with * and ?, and negations
	// with a leading !, e.g. "app-*,!app-pr-*", decided as Kopf decides
	// them: within one pattern the first glob says which namespaces are in
	// play, and a namespace is handled if any pattern accepts it.
	// Default: all namespaces.
	Namespaces []string

	// CleanupTimeout bounds the cleanup handlers at shutdown. Default: 30 s.
	CleanupTimeout time.Duration

	// ProbeCache is how long probe results are reused. Default: 10 s.
	ProbeCache time.Duration

	// Peering, if set, makes the operator take part in peering; see
	// PeeringOptions.
	Peering *PeeringOptions

	// Sharding, if set, makes this replica one shard of a ring: it works
	// only on the objects assigned to it; see Sharding.
	Sharding *Sharding

	// ConsistencyTimeout is how long a reconcile waits for the cache to show
	// gopf's own last write before it acts on what the cache holds. It stops
	// handlers from running twice for one change when the cache lags behind.
	// Default: 5 s.
	ConsistencyTimeout time.Duration
}

// LogEvents says which lines that handlers log through Cause.Log are also
// posted as Kubernetes Events about the object. Off by default: an Event per
// log line is a write per log line, the load that gave Kopf its reputation.
type LogEvents int

const (
	// LogEventsOff posts no Events for log lines. The default.
	LogEventsOff LogEvents = iota
	// LogEventsErrors posts error lines as Warning Events.
	LogEventsErrors
	// LogEventsInfo posts error lines as Warning and plain (V(0)) info
	// lines as Normal Events.
	LogEventsInfo
)

// Sharding makes the replicas of an operator share its objects, each
// working on its own shard of them, compatible with the reference design
// of timebertt/kubernetes-controller-sharding (its labels, Leases and
// hash; see docs/sharding.md). Each replica holds a Lease named after its
// shard, labelled with the ring, and caches and handles only the objects
// labelled shard.alpha.sharding.timebertt.dev/<ring>=<shard>; children
// created with objects.Adopt carry their owner's label. An object whose
// drain label (drain.alpha.sharding.timebertt.dev/<ring>) appears is
// handed over: its timers and daemons stop, an unfinished handler's
// progress stays on the object, and the replica removes both labels so
// that the object can be assigned anew; the next shard continues where
// this one stopped, as after a restart.
//
// Sharding works without leader election (every replica works), and the
// replicas' own caches of the handled kinds hold only their objects:
// memory and work per replica shrink as the ring grows.
type Sharding struct {
	// Ring names the ring: every replica of the operator gives the same
	// name. A DNS subdomain of at most 63 characters. Required.
	Ring string
	// Shard names this replica: its Lease and the value of the shard
	// label on its objects. Default: the host name (the Pod's name).
	Shard string
	// Namespace holds the ring's Leases, usually the operator's own.
	// Required.
	Namespace string
	// LeaseDuration is how long this replica's Lease lasts without
	// renewal: a replica that dies is known dead, and its objects move,
	// after twice that. A whole number of seconds. Default: 15 s.
	LeaseDuration time.Duration
	// KeepManagedFields keeps metadata.managedFields on the objects in the
	// shard's cache, which drops them by default (gopf.NewManager sets it
	// from ManagerOptions.KeepManagedFields).
	KeepManagedFields bool
	// ExternalAssigner leaves assigning objects to shards, and moving them
	// when shards come and go, to the reference design's sharder running
	// in the cluster. By default the replicas elect one of themselves (a
	// Lease named <Ring>-assigner) to do it: it lists the handled kinds
	// (and the kinds their level handlers own, whose objects follow their
	// owner) metadata only, every 30 s and whenever a shard joins or
	// leaves, labels unassigned objects, drains those that must move from
	// a live shard and moves those of a dead one at once; it writes only
	// for objects that move, at most 100 a second. Kinds whose CRD appears
	// after the operator starts are not assigned by it.
	ExternalAssigner bool
}

// PeeringOptions make an operator take part in peering: operators of the
// same peering name announce themselves in a peering object with a priority
// and a lifetime; while a live peer with a higher priority exists, the others
// pause (no handling, timers and daemons stopped), and they resume when it
// goes. Equal priorities pause all of them, with a warning. Peering is not
// leader election: use the manager's Lease-based leader election for
// replicas of one deployment. The shards of one ring (Sharding) are one
// operator to peering: they do not pause for one another, and every other
// peer, a freeze included, pauses or lets work all of them.
//
// A paused operator's handlers may still be running when a peer with a
// higher priority joins. So a gopf operator marks its entry "paused" while
// it pauses, and "busy" until the change handlers, timers and daemons it
// was running have returned; a joining operator does not handle objects
// until every live peer of a lower priority is paused and not busy, or
// until it has waited busyWaitLimit (or its Lifetime, if longer) for that.
// Kopf ignores these fields and does not write them, so a gopf operator
// joining above a Kopf operator always waits that long.
type PeeringOptions struct {
	// Name of the peering object. Required.
	Name string
	// Namespace of a KopfPeering object; empty means the cluster-scoped
	// ClusterKopfPeering (unless PerNamespace).
	Namespace string
	// PerNamespace uses the KopfPeering of Name in each namespace the
	// operator serves (Options.Namespaces; all namespaces if empty), as
	// Kopf does for an operator limited to namespaces: the operator pauses
	// if any of them says so, and announces itself in each. Without
	// Optional, a served namespace given by a plain name must have the
	// object; of namespaces matched by globs, those without one are left
	// out (Kopf would pause until each has one). Excludes Namespace.
	PerNamespace bool
	// Optional is Kopf's auto-detection (its peering is not "mandatory"):
	// while no peering object of Name exists, or the peering kinds are not
	// installed when the operator starts, the operator runs standalone
	// instead of pausing, and it joins the peering when the object appears.
	// Main sets it for the peering named "default" when --peering is not
	// given.
	Optional bool
	// Stealth makes the operator take part without announcing itself: it
	// writes nothing to the peering object (no entry, no removal of expired
	// entries) and pauses while any other live peer is there, whatever its
	// priority, since the others cannot know that they should pause for it.
	// Peers joining cannot wait for its running handlers either. Priority
	// must be 0. Kopf's settings.peering.stealth is another thing: it only
	// silences the keep-alive log lines, which gopf never logs.
	Stealth bool
	// Priority of this operator; the highest live priority works. Default 0.
	// A development run (`--dev`) uses DevPriority.
	Priority int
	// Lifetime after which an entry that was not renewed counts as gone.
	// Default: 60 s. Entries are renewed at about half their lifetime.
	Lifetime time.Duration
	// Identity of this operator in the peering object. Default: the POD_ID
	// environment variable, else user@host/time/random.
	Identity string
}

// DevPriority is the priority of a development run, high enough to pause
// the operator deployed in the cluster.
const DevPriority = 666

// Setup compiles the registrations of reg into one controller per watched
// kind and adds them to mgr. It fails, naming the handler, for a bad
// registration, a Go type missing from the manager's scheme, or a
// ForResource name the API server does not serve. A kind that is known (a
// Go type in the scheme, or ForKind) but not served yet, because its CRD is
// not installed, is logged and waited for: its handlers start when the CRD
// is established and stop when it is deleted. Handlers with ForCategory or
// ForKinds get the kinds they choose the same way, once the operator runs:
// each chosen kind that has no handlers of its own gets a controller,
// started and stopped as kinds come and go. Setup asks the API server
// which kinds exist, so it needs a reachable API server.
func Setup(mgr manager.Manager, reg *handlers.Registry, opts Options) error {
	return operator.Setup(mgr, reg, engine.OptionsFrom(opts))
}
