package peering

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/user"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options are reconcile.Options, field for field.
type Options struct {
	Name         string
	Namespace    string
	PerNamespace bool
	Optional     bool
	Stealth      bool
	Priority     int
	Lifetime     time.Duration
	Identity     string
}

// busyWaitLimit bounds how long a joining operator waits for the peers it
// pauses to finish their handlers (see Options).
const busyWaitLimit = 30 * time.Second

// leaveTimeout bounds how long a stopping operator waits for its running
// handlers before it leaves the peering: the writes of a reconcile once the
// manager stops (10 s) and more.
const leaveTimeout = 30 * time.Second

// busyPoll is how often a paused operator checks whether its handlers have
// returned, to clear its busy flag.
const busyPoll = 100 * time.Millisecond

func (p *Options) Validate() error {
	if p.Name == "" {
		return errors.New("gopf: peering needs the name of a peering object")
	}
	if p.Lifetime < 0 {
		return errors.New("gopf: the peering lifetime cannot be negative")
	}
	if p.PerNamespace && p.Namespace != "" {
		return errors.New("gopf: a peering is either in one namespace (Namespace) or in each served namespace (PerNamespace), not both")
	}
	if p.Stealth && p.Priority != 0 {
		return fmt.Errorf("gopf: a stealth peer pauses for every live peer, so its priority (%d) would not count; leave it 0", p.Priority)
	}
	return nil
}

func (p Options) WithDefaults() Options {
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

// Peer is one entry of a peering object: Kopf's three fields, and gopf's
// paused and busy flags (see Options), which Kopf ignores.
type Peer struct {
	Priority int    `json:"priority"`
	Lifetime int    `json:"lifetime"`
	LastSeen string `json:"lastseen"`
	Paused   bool   `json:"paused,omitempty"`
	Busy     bool   `json:"busy,omitempty"`
	// Message says why a freeze was written (freeze --message); Kopf
	// ignores it.
	Message string `json:"message,omitempty"`
	// Ring names the sharding ring of a peer that is one shard of an
	// operator (see Peering.Ring); Kopf ignores it.
	Ring string `json:"ring,omitempty"`
}

// settled reports whether a lower-priority peer can no longer be handling
// objects: it pauses and its handlers have returned.
func (p Peer) settled() bool { return p.Paused && !p.Busy }

func (p Peer) Alive(now time.Time) bool {
	seen, err := kopfstate.ParseTime(p.LastSeen) // Kopf writes isoformat(), older releases without an offset
	return err == nil && now.Before(seen.Add(time.Duration(p.Lifetime)*time.Second))
}

// Peering keeps this operator's entry alive in the peering objects, watches
// the others', and pauses or resumes the operator. It runs whether or not
// this replica holds a leader-election lease.
type Peering struct {
	Opts Options
	// Ring is the sharding ring this operator is a shard of, "" without
	// sharding. The shards of one ring are replicas of one operator, each
	// working on its own objects: they announce the ring in their entries
	// and do not pause for one another, whatever their priorities, while
	// every other peer (a freeze, another operator) counts for each of
	// them as for an operator alone, so that a freeze pauses every shard.
	Ring   string
	host   host
	scope  *scope.Scope
	paused prometheus.Gauge // the peering's gopf_peering_paused
	cache  cache.Cache
	writer client.Client
	log    logr.Logger
	GVK    schema.GroupVersionKind
	poke   chan struct{}
	// waitingSince is when this operator began to wait for lower-priority
	// peers to settle; zero when it is not waiting.
	waitingSince time.Time
	// alone is set while an optional peering has no object, so that the
	// change is logged once.
	alone bool
}

// host is the operator a peering pauses and resumes: the gate its handlers
// pass, and whether any of them is running.
type host interface {
	// Pause stops handlers from starting, for reason.
	Pause(reason string)
	// Resume lets handlers start again.
	Resume()
	// Paused is why the operator is paused, "" when it is not.
	Paused() string
	// Busy reports whether handlers are running.
	Busy() bool
	// Idle waits up to timeout for the running handlers to return and
	// reports whether they did.
	Idle(timeout time.Duration) bool
}

func New(mgr manager.Manager, h host, sc *scope.Scope, paused prometheus.Gauge, opts Options, log logr.Logger) *Peering {
	opts = opts.WithDefaults()
	return &Peering{
		Opts: opts, host: h, scope: sc, paused: paused, cache: mgr.GetCache(), writer: mgr.GetClient(),
		log:  log.WithName("peering").WithValues("peering", opts.Name, "identity", opts.Identity, "priority", opts.Priority),
		GVK:  Kind(opts),
		poke: make(chan struct{}, 1),
	}
}

// NeedLeaderElection is false: peering decides between operators by itself.
func (p *Peering) NeedLeaderElection() bool { return false }

// Start renews this operator's entries and re-decides on every change of the
// peering objects until the manager stops; then it removes its entries.
func (p *Peering) Start(ctx context.Context) error {
	p.host.Pause("waiting for the peering object")
	p.paused.Set(1)
	inf, err := p.cache.GetInformer(ctx, p.Object(), cache.BlockUntilSynced(false))
	if err != nil {
		if p.Opts.Optional && meta.IsNoMatchError(err) {
			p.log.Info("the peering kinds are not installed: running standalone", "kind", p.GVK.Kind)
			p.host.Resume()
			p.paused.Set(0)
			return nil
		}
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
	p.takePart(ctx)
	return nil
}

// takePart decides, and announces this operator, again on every change of
// the peering objects, when a blocking peer expires and when the entries
// are due for renewal, until ctx ends; then it leaves the peering.
func (p *Peering) takePart(ctx context.Context) {
	renew := p.Opts.Lifetime / 2
	next := time.Now().Add(renew)
	sent := map[string]Peer{} // by the namespace of the peering object
	for {
		found, wait := p.decide(ctx)
		due := !time.Now().Before(next)
		if due {
			next = time.Now().Add(renew)
		}
		if !p.Opts.Stealth {
			p.announce(ctx, found, sent, due)
		}
		if !p.sleep(ctx, p.untilNextLook(wait, next)) {
			p.leave(ctx, sent)
			return
		}
	}
}

// untilNextLook is how long to wait before deciding again: until decide
// asked to look again (wait, if set), or the next renewal, whichever comes
// first; and while paused with handlers running, until the next check that
// they have returned, so that the busy flag is cleared soon.
func (p *Peering) untilNextLook(wait time.Duration, renewal time.Time) time.Duration {
	if until := time.Until(renewal); wait <= 0 || until < wait {
		wait = until
	}
	if p.host.Paused() != "" && p.host.Busy() && wait > busyPoll {
		wait = busyPoll
	}
	return wait
}

// sleep waits d, or until a peering object changes; it reports false if ctx
// ends first.
func (p *Peering) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-p.poke:
	case <-t.C:
	}
	return true
}

// leave stops handling and lets running handlers finish, so that a peer
// taking over never works on the same objects at once; then it removes
// this operator's entries, so that the peer need not wait for their
// lifetime.
func (p *Peering) leave(ctx context.Context, sent map[string]Peer) {
	p.host.Pause("the operator is stopping")
	if !p.host.Idle(leaveTimeout) {
		p.log.Info("WARNING: handlers still running when leaving the peering")
	}
	for ns := range sent {
		p.touch(context.WithoutCancel(ctx), ns, nil)
	}
}

// announce writes this operator's entry to the peering objects found (in
// the namespaces named): to all of them when renew is set, else to those
// not written yet and those whose flags changed. sent remembers what was
// written where.
func (p *Peering) announce(ctx context.Context, found []string, sent map[string]Peer, renew bool) {
	me := p.entry()
	for _, ns := range found {
		if last, ok := sent[ns]; renew || !ok || last.Paused != me.Paused || last.Busy != me.Busy {
			p.touch(ctx, ns, &me)
			sent[ns] = me
		}
	}
	for ns := range sent {
		if !slices.Contains(found, ns) {
			delete(sent, ns) // the object is gone, and the entry with it
		}
	}
}

// entry is this operator's entry as of now.
func (p *Peering) entry() Peer {
	paused := p.host.Paused() != ""
	return Peer{
		Priority: p.Opts.Priority,
		Lifetime: int(p.Opts.Lifetime.Seconds() + 0.5),
		LastSeen: time.Now().UTC().Format(time.RFC3339),
		Paused:   paused,
		Busy:     paused && p.host.Busy(),
		Ring:     p.Ring,
	}
}

func (p *Peering) wake() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// Object is the peering object of Options.Namespace.
func (p *Peering) Object() *unstructured.Unstructured { return p.objectIn(p.Opts.Namespace) }

// objectIn is the peering object in namespace ns ("" for the cluster-scoped
// one).
func (p *Peering) objectIn(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(p.GVK)
	u.SetName(p.Opts.Name)
	u.SetNamespace(ns)
	return u
}

// touch writes (or, with nil, removes) this operator's entry in the peering
// object of namespace ns.
func (p *Peering) touch(ctx context.Context, ns string, me *Peer) {
	if err := writePeer(ctx, p.writer, p.objectIn(ns), p.Opts.Identity, me); err != nil && !apierrors.IsNotFound(err) {
		p.log.Error(err, "cannot renew this operator's peering entry", "namespace", ns)
	}
}

// objects lists the peering objects this operator takes part in, from the
// cache, sorted by namespace.
func (p *Peering) objects(ctx context.Context) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(p.GVK.GroupVersion().WithKind(p.GVK.Kind + "List"))
	var opts []client.ListOption
	if p.Opts.Namespace != "" {
		opts = append(opts, client.InNamespace(p.Opts.Namespace))
	}
	if err := p.cache.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		o := &list.Items[i]
		if o.GetName() == p.Opts.Name && (!p.Opts.PerNamespace || p.scope.Includes(o.GetNamespace())) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetNamespace() < out[j].GetNamespace() })
	return out, nil
}

// missing says why a mandatory peering lacks its objects, or "".
func (p *Peering) missing(objs []*unstructured.Unstructured) string {
	if p.Opts.Optional {
		return ""
	}
	switch {
	case p.Opts.PerNamespace:
		var absent []string
		for _, ns := range p.scope.Literal() {
			if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetNamespace() == ns }) {
				absent = append(absent, ns)
			}
		}
		if len(absent) > 0 {
			return fmt.Sprintf("the peering object %s does not exist in namespaces %s", p.Opts.Name, strings.Join(absent, ", "))
		}
		if len(objs) == 0 {
			return fmt.Sprintf("no served namespace has a peering object %s", p.Opts.Name)
		}
	case len(objs) == 0:
		return fmt.Sprintf("the peering object %s does not exist", p.Opts.Name)
	}
	return ""
}

// decide reads the peering objects, pauses or resumes the operator, removes
// expired entries, and returns the namespaces of the objects found and when
// to look again (when a blocking peer expires), or 0 for "at the next
// renewal".
func (p *Peering) decide(ctx context.Context) ([]string, time.Duration) {
	objs, err := p.objects(ctx)
	if err != nil {
		p.pause("the peering objects cannot be read: " + err.Error())
		return nil, time.Second
	}
	now := time.Now()
	var found []string
	var live livePeers
	for _, obj := range objs {
		found = append(found, obj.GetNamespace())
		expired := p.count(&live, obj, now)
		p.removeExpired(ctx, obj, expired)
	}
	live.sort()
	if len(live.higher) > 0 || len(live.equal) > 0 || len(live.unsettled) == 0 {
		p.waitingSince = time.Time{}
	}
	wait := live.wait
	switch missing := p.missing(objs); {
	case missing != "":
		p.pause(missing)
		return found, time.Second
	case len(live.higher) > 0 && p.Opts.Stealth:
		p.pause("a stealth operator pauses while other peers are alive: " + strings.Join(live.higher, ", "))
	case len(live.higher) > 0:
		p.pause("peers with a higher priority are alive: " + strings.Join(live.higher, ", "))
	case len(live.equal) > 0:
		p.pause("peers with the same priority are alive (give each operator its own priority): " + strings.Join(live.equal, ", "))
	case len(live.unsettled) > 0 && p.waitForSettling(now, &wait):
		p.pause("waiting for peers with a lower priority to pause and finish their handlers: " + strings.Join(live.unsettled, ", "))
	default:
		p.resume(len(objs) == 0)
	}
	return found, wait
}

// livePeers are the other live peers that keep this operator paused, by
// why, named for the log; and when the first one that pauses it by its
// priority expires (0 if none does).
type livePeers struct {
	higher    []string // with a higher priority; for a stealth operator, any peer
	equal     []string // with the same priority
	unsettled []string // with a lower priority, not paused or still busy
	wait      time.Duration
}

// count adds the live entries of a peering object to live, and returns the
// ids of those that expired.
func (p *Peering) count(live *livePeers, obj *unstructured.Unstructured, now time.Time) (expired []string) {
	status, _ := obj.Object["status"].(map[string]any)
	for id, raw := range status {
		if id == p.Opts.Identity || raw == nil {
			continue
		}
		var other Peer
		if data, err := json.Marshal(raw); err != nil || json.Unmarshal(data, &other) != nil {
			continue
		}
		if !other.Alive(now) {
			expired = append(expired, id)
			continue
		}
		if p.Ring != "" && other.Ring == p.Ring {
			continue // another shard of this operator: it works beside this one
		}
		name := id
		if other.Message != "" {
			name += fmt.Sprintf(" (%q)", other.Message)
		}
		if p.Opts.PerNamespace {
			name += " in " + obj.GetNamespace()
		}
		live.add(p.Opts, name, other, now)
	}
	return expired
}

// add counts one live peer, named name, against this operator's options.
func (live *livePeers) add(opts Options, name string, other Peer, now time.Time) {
	switch {
	case opts.Stealth || other.Priority > opts.Priority:
		live.higher = append(live.higher, name)
	case other.Priority == opts.Priority:
		live.equal = append(live.equal, name)
	case !other.settled():
		live.unsettled = append(live.unsettled, name) // woken by its next change
		return
	default:
		return
	}
	seen, _ := kopfstate.ParseTime(other.LastSeen)
	if left := seen.Add(time.Duration(other.Lifetime) * time.Second).Sub(now); live.wait == 0 || left < live.wait {
		live.wait = left
	}
}

// sort puts the names in order, for a stable log.
func (live *livePeers) sort() {
	sort.Strings(live.higher)
	sort.Strings(live.equal)
	sort.Strings(live.unsettled)
}

// removeExpired removes expired entries from a peering object, unless this
// operator is a stealth one, which writes nothing.
func (p *Peering) removeExpired(ctx context.Context, obj *unstructured.Unstructured, expired []string) {
	if p.Opts.Stealth {
		return
	}
	for _, id := range expired {
		if err := writePeer(ctx, p.writer, obj, id, nil); err == nil {
			p.log.Info("removed an expired peer", "peer", id, "namespace", obj.GetNamespace())
		}
	}
}

// resume lets the operator handle objects: no peer keeps it paused. alone
// says there is no peering object (an optional peering), which is logged
// when it begins.
func (p *Peering) resume(alone bool) {
	if alone != p.alone {
		p.alone = alone
		if alone {
			p.log.Info("no peering object of this name: running standalone until one appears")
		}
	}
	if was := p.host.Paused(); was != "" {
		p.log.Info("resuming: no peer with a higher or equal priority is alive")
	}
	p.host.Resume()
	p.paused.Set(0)
}

// waitForSettling reports whether to keep waiting for lower-priority peers
// to settle, and lowers wait to when the wait ends. Once the wait is over,
// it warns and the operator goes on without them.
func (p *Peering) waitForSettling(now time.Time, wait *time.Duration) bool {
	limit := max(busyWaitLimit, p.Opts.Lifetime)
	if p.waitingSince.IsZero() {
		p.waitingSince = now
	}
	left := p.waitingSince.Add(limit).Sub(now)
	if left <= 0 {
		if p.host.Paused() != "" {
			p.log.Info("WARNING: peers with a lower priority did not confirm that they pause and are idle (Kopf operators never do); handling objects anyway", "waited", limit)
		}
		return false
	}
	if *wait == 0 || left < *wait {
		*wait = left
	}
	return true
}

func (p *Peering) pause(reason string) {
	if p.host.Paused() != reason {
		p.log.Info("pausing: "+reason, "warning", strings.Contains(reason, "same priority"))
	}
	p.host.Pause(reason)
	p.paused.Set(1)
}

// writePeer sets (or, with nil, removes) one entry of a peering object with a
// merge patch, which leaves the other entries alone.
func writePeer(ctx context.Context, c client.Client, obj *unstructured.Unstructured, id string, entry *Peer) error {
	var value any
	if entry != nil {
		// A merge patch merges maps: fields that are off are nulled, or a
		// stored "busy": true would outlive the patch.
		value = map[string]any{
			"priority": entry.Priority, "lifetime": entry.Lifetime, "lastseen": entry.LastSeen,
			"paused": trueOrNil(entry.Paused), "busy": trueOrNil(entry.Busy), "message": stringOrNil(entry.Message),
			"ring": stringOrNil(entry.Ring),
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

func stringOrNil(s string) any {
	if s != "" {
		return s
	}
	return nil
}

// FreezeOptions describe the fake peer that the freeze command writes.
type FreezeOptions struct {
	// Identity the entry is written under; resume removes it by the same
	// identity. Required.
	Identity string
	// Priority of the freeze: operators of a lower priority pause.
	Priority int
	// Lifetime after which the freeze ends by itself. Required, at least
	// a second.
	Lifetime time.Duration
	// Message says why, for whoever reads the peering object and the
	// paused operators' logs. Optional.
	Message string
}

// Freeze writes a fake peer into the peering objects of name, pausing every
// operator of that peering with a lower priority for f.Lifetime (the
// `freeze` command). With no namespaces, it writes to the ClusterKopfPeering;
// else to the KopfPeering in each namespace the patterns match (as
// Options.Namespaces reads them): a namespace given by its plain name must
// have one, and globs must match at least one.
func Freeze(ctx context.Context, c client.Client, name string, namespaces []string, f FreezeOptions) error {
	if f.Identity == "" {
		return errors.New("gopf: a freeze needs an identity")
	}
	if f.Lifetime < time.Second {
		return fmt.Errorf("gopf: a freeze needs a lifetime of at least a second, not %s", f.Lifetime)
	}
	entry := &Peer{Priority: f.Priority, Lifetime: int(f.Lifetime.Seconds() + 0.5), LastSeen: time.Now().UTC().Format(time.RFC3339), Message: f.Message}
	return writeEach(ctx, c, name, namespaces, f.Identity, entry)
}

// Unfreeze removes the fake peer Freeze wrote under identity from the same
// peering objects (the `resume` command).
func Unfreeze(ctx context.Context, c client.Client, name string, namespaces []string, identity string) error {
	if identity == "" {
		return errors.New("gopf: resume needs the identity of the freeze")
	}
	return writeEach(ctx, c, name, namespaces, identity, nil)
}

// writeEach writes one entry to each peering object Freeze describes.
func writeEach(ctx context.Context, c client.Client, name string, namespaces []string, id string, entry *Peer) error {
	if name == "" {
		return errors.New("gopf: the name of the peering is required")
	}
	sc, err := scope.New(namespaces)
	if err != nil {
		return fmt.Errorf("gopf: %w", err)
	}
	p := &Peering{Opts: Options{Name: name, PerNamespace: sc != nil}}
	p.GVK = Kind(p.Opts)
	var targets []string
	switch literal := sc.Literal(); {
	case sc == nil:
		targets = []string{""}
	case literal != nil:
		targets = literal
	default:
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(p.GVK.GroupVersion().WithKind(p.GVK.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return fmt.Errorf("gopf: listing the peering objects: %w", err)
		}
		for _, o := range list.Items {
			if o.GetName() == name && sc.Includes(o.GetNamespace()) {
				targets = append(targets, o.GetNamespace())
			}
		}
		if len(targets) == 0 {
			return fmt.Errorf("gopf: no namespace matching %s has a peering object %s", strings.Join(namespaces, " "), name)
		}
	}
	var errs []error
	for _, ns := range targets {
		if err := writePeer(ctx, c, p.objectIn(ns), id, entry); err != nil {
			where := "cluster-wide"
			if ns != "" {
				where = "in namespace " + ns
			}
			errs = append(errs, fmt.Errorf("gopf: peering %s %s: %w", name, where, err))
		}
	}
	return errors.Join(errs...)
}

func Kind(opts Options) schema.GroupVersionKind {
	if opts.Namespace != "" || opts.PerNamespace {
		return schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfPeering"}
	}
	return schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "ClusterKopfPeering"}
}
