package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// PeeringOptions make an operator take part in peering: operators of the
// same peering name announce themselves in a peering object with a priority
// and a lifetime; while a live peer with a higher priority exists, the others
// pause (no handling, timers and daemons stopped), and they resume when it
// goes. Equal priorities pause all of them, with a warning. Peering is not
// leader election: use the manager's Lease-based leader election for
// replicas of one deployment.
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
	// ClusterKopfPeering.
	Namespace string
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

// busyWaitLimit bounds how long a joining operator waits for the peers it
// pauses to finish their handlers (see PeeringOptions).
const busyWaitLimit = 30 * time.Second

// busyPoll is how often a paused operator checks whether its handlers have
// returned, to clear its busy flag.
const busyPoll = 100 * time.Millisecond

// DevPriority is the priority of a development run, high enough to pause
// the operator deployed in the cluster.
const DevPriority = 666

func (p *PeeringOptions) validate() error {
	if p.Name == "" {
		return errors.New("gopf: peering needs the name of a peering object")
	}
	if p.Lifetime < 0 {
		return errors.New("gopf: the peering lifetime cannot be negative")
	}
	return nil
}

func (p PeeringOptions) withDefaults() PeeringOptions {
	if p.Lifetime <= 0 {
		p.Lifetime = 60 * time.Second
	}
	if p.Identity == "" {
		p.Identity = DefaultIdentity()
	}
	return p
}

// DefaultIdentity is an operator's name in peering objects: POD_ID if set,
// else user@host/start time/random suffix.
func DefaultIdentity() string {
	if id := os.Getenv("POD_ID"); id != "" {
		return id
	}
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	suffix := []byte{letters[rand.IntN(len(letters))], letters[rand.IntN(len(letters))], letters[rand.IntN(len(letters))]}
	return fmt.Sprintf("%s@%s/%s/%s", name, host, time.Now().UTC().Format("20060102150405"), suffix)
}

// peer is one entry of a peering object: Kopf's three fields, and gopf's
// paused and busy flags (see PeeringOptions), which Kopf ignores.
type peer struct {
	Priority int    `json:"priority"`
	Lifetime int    `json:"lifetime"`
	LastSeen string `json:"lastseen"`
	Paused   bool   `json:"paused,omitempty"`
	Busy     bool   `json:"busy,omitempty"`
}

// settled reports whether a lower-priority peer can no longer be handling
// objects: it pauses and its handlers have returned.
func (p peer) settled() bool { return p.Paused && !p.Busy }

func (p peer) alive(now time.Time) bool {
	seen, err := parseKopfTime(p.LastSeen) // Kopf writes isoformat(), older releases without an offset
	return err == nil && now.Before(seen.Add(time.Duration(p.Lifetime)*time.Second))
}

// peering keeps this operator's entry alive in the peering object, watches
// the others', and pauses or resumes the operator. It runs whether or not
// this replica holds a leader-election lease.
type peering struct {
	opts   PeeringOptions
	sh     *shared
	cache  cache.Cache
	writer client.Client
	log    logr.Logger
	gvk    schema.GroupVersionKind
	poke   chan struct{}
	// waitingSince is when this operator began to wait for lower-priority
	// peers to settle; zero when it is not waiting.
	waitingSince time.Time
}

func newPeering(mgr manager.Manager, sh *shared, opts PeeringOptions, log logr.Logger) *peering {
	opts = opts.withDefaults()
	kind := "ClusterKopfPeering"
	if opts.Namespace != "" {
		kind = "KopfPeering"
	}
	return &peering{
		opts: opts, sh: sh, cache: mgr.GetCache(), writer: mgr.GetClient(),
		log:  log.WithName("peering").WithValues("peering", opts.Name, "identity", opts.Identity, "priority", opts.Priority),
		gvk:  schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: kind},
		poke: make(chan struct{}, 1),
	}
}

// NeedLeaderElection is false: peering decides between operators by itself.
func (p *peering) NeedLeaderElection() bool { return false }

// Start renews this operator's entry and re-decides on every change of the
// peering object until the manager stops; then it removes its entry.
func (p *peering) Start(ctx context.Context) error {
	p.sh.gate.pause("waiting for the peering object")
	peeringState.WithLabelValues(p.opts.Name).Set(1)
	inf, err := p.cache.GetInformer(ctx, p.object(), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("gopf: watching peering objects: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.wake() },
		UpdateFunc: func(any, any) { p.wake() },
		DeleteFunc: func(any) { p.wake() },
	})
	if err != nil {
		return fmt.Errorf("gopf: watching peering objects: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()

	renew := p.opts.Lifetime / 2
	next := time.Now()
	var sent *peer
	for {
		wait := p.decide(ctx)
		// The entry is renewed in time, and at once when the flags change.
		me := p.entry()
		if !time.Now().Before(next) || sent == nil || me.Paused != sent.Paused || me.Busy != sent.Busy {
			p.touch(ctx, &me)
			sent, next = &me, time.Now().Add(renew)
		}
		if until := time.Until(next); wait <= 0 || until < wait {
			wait = until
		}
		if me.Busy && wait > busyPoll {
			wait = busyPoll
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			// Stop handling and let running handlers finish before leaving,
			// so that a peer taking over never works on the same objects at
			// once; then leave, so that it need not wait for our lifetime.
			p.sh.gate.pause("the operator is stopping")
			if !p.sh.idle(writeTimeout + 20*time.Second) {
				p.log.Info("WARNING: handlers still running when leaving the peering")
			}
			p.touch(context.WithoutCancel(ctx), nil)
			return nil
		case <-p.poke:
			t.Stop()
		case <-t.C:
		}
	}
}

// entry is this operator's entry as of now.
func (p *peering) entry() peer {
	paused := p.sh.gate.paused() != ""
	return peer{
		Priority: p.opts.Priority,
		Lifetime: int(p.opts.Lifetime.Seconds() + 0.5),
		LastSeen: time.Now().UTC().Format(time.RFC3339),
		Paused:   paused,
		Busy:     paused && p.sh.busy.Load() > 0,
	}
}

func (p *peering) wake() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

func (p *peering) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(p.gvk)
	u.SetName(p.opts.Name)
	u.SetNamespace(p.opts.Namespace)
	return u
}

// touch writes (or, with nil, removes) this operator's entry.
func (p *peering) touch(ctx context.Context, me *peer) {
	if err := writePeer(ctx, p.writer, p.object(), p.opts.Identity, me); err != nil && !apierrors.IsNotFound(err) {
		p.log.Error(err, "cannot renew this operator's peering entry")
	}
}

// decide reads the peering object, pauses or resumes the operator, removes
// expired entries, and returns when to look again (when a blocking peer
// expires), or 0 for "at the next renewal".
func (p *peering) decide(ctx context.Context) time.Duration {
	obj := p.object()
	err := p.cache.Get(ctx, types.NamespacedName{Namespace: p.opts.Namespace, Name: p.opts.Name}, obj)
	if err != nil {
		reason := "the peering object " + p.opts.Name + " does not exist"
		if !apierrors.IsNotFound(err) {
			reason = "the peering object cannot be read: " + err.Error()
		}
		p.pause(reason)
		return time.Second
	}
	now := time.Now()
	status, _ := obj.Object["status"].(map[string]any)
	var higher, equal, unsettled, expired []string
	var wait time.Duration
	for id, raw := range status {
		if id == p.opts.Identity || raw == nil {
			continue
		}
		var other peer
		if data, err := json.Marshal(raw); err != nil || json.Unmarshal(data, &other) != nil {
			continue
		}
		if !other.alive(now) {
			expired = append(expired, id)
			continue
		}
		seen, _ := parseKopfTime(other.LastSeen)
		left := seen.Add(time.Duration(other.Lifetime) * time.Second).Sub(now)
		switch {
		case other.Priority > p.opts.Priority:
			higher = append(higher, id)
		case other.Priority == p.opts.Priority:
			equal = append(equal, id)
		case !other.settled():
			unsettled = append(unsettled, id) // woken by its next change
			continue
		default:
			continue
		}
		if wait == 0 || left < wait {
			wait = left
		}
	}
	for _, id := range expired {
		if err := writePeer(ctx, p.writer, obj, id, nil); err == nil {
			p.log.Info("removed an expired peer", "peer", id)
		}
	}
	sort.Strings(higher)
	sort.Strings(equal)
	sort.Strings(unsettled)
	if len(higher) > 0 || len(equal) > 0 || len(unsettled) == 0 {
		p.waitingSince = time.Time{}
	}
	switch {
	case len(higher) > 0:
		p.pause("peers with a higher priority are alive: " + strings.Join(higher, ", "))
	case len(equal) > 0:
		p.pause("peers with the same priority are alive (give each operator its own priority): " + strings.Join(equal, ", "))
	case len(unsettled) > 0 && p.waitForSettling(now, &wait):
		p.pause("waiting for peers with a lower priority to pause and finish their handlers: " + strings.Join(unsettled, ", "))
	default:
		if was := p.sh.gate.paused(); was != "" {
			p.log.Info("resuming: no peer with a higher or equal priority is alive")
		}
		p.sh.gate.resume()
		peeringState.WithLabelValues(p.opts.Name).Set(0)
	}
	return wait
}

// waitForSettling reports whether to keep waiting for lower-priority peers
// to settle, and lowers wait to when the wait ends. Once the wait is over,
// it warns and the operator goes on without them.
func (p *peering) waitForSettling(now time.Time, wait *time.Duration) bool {
	limit := max(busyWaitLimit, p.opts.Lifetime)
	if p.waitingSince.IsZero() {
		p.waitingSince = now
	}
	left := p.waitingSince.Add(limit).Sub(now)
	if left <= 0 {
		if p.sh.gate.paused() != "" {
			p.log.Info("WARNING: peers with a lower priority did not confirm that they pause and are idle (Kopf operators never do); handling objects anyway", "waited", limit)
		}
		return false
	}
	if *wait == 0 || left < *wait {
		*wait = left
	}
	return true
}

func (p *peering) pause(reason string) {
	if p.sh.gate.paused() != reason {
		p.log.Info("pausing: "+reason, "warning", strings.Contains(reason, "same priority"))
	}
	p.sh.gate.pause(reason)
	peeringState.WithLabelValues(p.opts.Name).Set(1)
}

// writePeer sets (or, with nil, removes) one entry of a peering object with a
// merge patch, which leaves the other entries alone.
func writePeer(ctx context.Context, c client.Client, obj *unstructured.Unstructured, id string, entry *peer) error {
	var value any
	if entry != nil {
		// A merge patch merges maps: flags that are off are nulled, or a
		// stored "busy": true would outlive the patch.
		value = map[string]any{
			"priority": entry.Priority, "lifetime": entry.Lifetime, "lastseen": entry.LastSeen,
			"paused": trueOrNil(entry.Paused), "busy": trueOrNil(entry.Busy),
		}
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{id: value}})
	if err != nil {
		return err
	}
	target := obj.DeepCopy()
	return c.Patch(ctx, target, client.RawPatch(types.MergePatchType, data))
}

func trueOrNil(b bool) any {
	if b {
		return true
	}
	return nil
}

// Freeze writes a fake peer with the given priority into a peering object for
// lifetime, pausing every operator of that peering with a lower priority
// (the `freeze` command); Unfreeze removes it again.
func Freeze(ctx context.Context, c client.Client, opts PeeringOptions, priority int, lifetime time.Duration) error {
	opts = opts.withDefaults()
	p := &peering{opts: opts, gvk: peeringKind(opts)}
	entry := &peer{Priority: priority, Lifetime: int(lifetime.Seconds() + 0.5), LastSeen: time.Now().UTC().Format(time.RFC3339)}
	return writePeer(ctx, c, p.object(), opts.Identity, entry)
}

// Unfreeze removes the fake peer Freeze wrote with the same identity.
func Unfreeze(ctx context.Context, c client.Client, opts PeeringOptions) error {
	opts = opts.withDefaults()
	p := &peering{opts: opts, gvk: peeringKind(opts)}
	return writePeer(ctx, c, p.object(), opts.Identity, nil)
}

func peeringKind(opts PeeringOptions) schema.GroupVersionKind {
	if opts.Namespace != "" {
		return schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfPeering"}
	}
	return schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "ClusterKopfPeering"}
}
