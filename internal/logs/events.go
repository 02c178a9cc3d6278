package logs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Events posts core/v1 Events, as Kopf posts them, for gopf and its
// handlers: every type the API server accepts (Kopf's handlers post their
// own types, not only Normal and Warning), each distinct message an Event
// of its own, and only a true repeat — the same object, type, reason and
// message within seriesWindow — folded into the Event before it, whose
// count it raises. client-go's events recorder, which controller-runtime's
// manager hands out, drops types other than Normal and Warning and folds
// every Event of one object, type and reason into the first one's message.
//
// Posting never blocks the caller: Events wait in a bounded queue for one
// worker (Start), and what does not fit is dropped and counted in the log.
type Events struct {
	c         client.Client
	scheme    *runtime.Scheme
	component string
	instance  string
	queue     chan pendingEvent
	log       logr.Logger

	mu      sync.Mutex
	posted  map[eventKey]*postedEvent // the recent Events, for folding repeats
	swept   time.Time                 // when posted was last rid of old Events
	dropped int                       // Events dropped since the last report
}

// seriesWindow is how long a posted Event takes repeats of itself.
const seriesWindow = 10 * time.Minute

// eventQueue is how many Events may wait to be posted.
const eventQueue = 1024

// maxEventMessage is the longest message the API server accepts for an
// Event, in bytes.
const maxEventMessage = 1024

// eventKey is what makes two Events one: a repeat.
type eventKey struct {
	uid                 types.UID
	eventType, reason   string
	message, relatedUID string
}

type postedEvent struct {
	namespace, name string
	count           int32
	at              time.Time
}

type pendingEvent struct {
	event *corev1.Event
	key   eventKey
}

// NewEvents returns the Events of component, posted with c. The scheme
// names the kinds of typed objects.
func NewEvents(c client.Client, scheme *runtime.Scheme, component string, log logr.Logger) *Events {
	host, _ := os.Hostname()
	return &Events{c: c, scheme: scheme, component: component, instance: host, log: log,
		queue: make(chan pendingEvent, eventQueue), posted: map[eventKey]*postedEvent{}}
}

// Eventf posts an Event about regarding, and the related object if not nil
// (controller-runtime's recorder.EventRecorder). action is not part of a
// core/v1 Event's identity; it is kept in the Event's action field.
func (e *Events) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	e.post(regarding, related, eventType, reason, action, fmt.Sprintf(note, args...))
}

// AnnotatedEventf is Eventf; core/v1 Events take no annotations from gopf.
func (e *Events) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventType, reason, action, note string, args ...any) {
	e.Eventf(regarding, related, eventType, reason, action, note, args...)
}

// post queues the Event, or drops it if the queue is full.
func (e *Events) post(regarding, related runtime.Object, eventType, reason, action, message string) {
	ref, err := e.reference(regarding)
	if err != nil {
		e.log.V(1).Info("an Event about an object that cannot be referred to is not posted", "reason", reason, "error", err.Error())
		return
	}
	message = spec.Truncate(message, maxEventMessage)
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: eventNamespace(ref.Namespace), Name: eventName(ref.Name, now.Time)},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		Action:              action,
		Source:              corev1.EventSource{Component: e.component, Host: e.instance},
		ReportingController: e.component,
		ReportingInstance:   e.instance,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	key := eventKey{uid: ref.UID, eventType: eventType, reason: reason, message: message}
	if related != nil {
		if rel, err := e.reference(related); err == nil {
			ev.Related, key.relatedUID = rel, string(rel.UID)
		}
	}
	select {
	case e.queue <- pendingEvent{event: ev, key: key}:
	default:
		e.mu.Lock()
		e.dropped++
		e.mu.Unlock()
	}
}

// eventName names a new Event about the object named: its name, shortened
// to leave room within a name's 253 characters, and the time in hex.
func eventName(object string, at time.Time) string {
	if len(object) > 200 {
		object = object[:200]
	}
	return object + "." + strconv.FormatInt(at.UnixNano(), 16)
}

// eventNamespace is where an Event about an object of namespace lives:
// there, or "default" for a cluster-scoped object, as kubectl looks for it.
func eventNamespace(namespace string) string {
	if namespace == "" {
		return metav1.NamespaceDefault
	}
	return namespace
}

// reference refers to obj, with its kind from the object or the scheme.
func (e *Events) reference(obj runtime.Object) (*corev1.ObjectReference, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		if gvk, err = apiutil.GVKForObject(obj, e.scheme); err != nil {
			return nil, err
		}
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}, nil
}

// Start posts the queued Events until ctx is done; those still queued then
// are dropped. It is a manager.Runnable that every replica runs.
func (e *Events) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case p := <-e.queue:
			e.send(ctx, p)
		}
	}
}

// NeedLeaderElection returns false: a standby's handlers do not run, but
// its own Events are posted.
func (*Events) NeedLeaderElection() bool { return false }

// send posts one Event: a new one, or a repeat that raises the count of
// the Event it repeats.
func (e *Events) send(ctx context.Context, p pendingEvent) {
	e.reportDropped()
	now := p.event.LastTimestamp
	e.mu.Lock()
	prev := e.posted[p.key]
	e.forgetOld(now.Time)
	e.mu.Unlock()
	if prev != nil {
		body, err := json.Marshal(map[string]any{"count": prev.count + 1, "lastTimestamp": now})
		if err == nil {
			repeat := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: prev.namespace, Name: prev.name}}
			err = e.c.Patch(ctx, repeat, client.RawPatch(types.MergePatchType, body))
		}
		if err == nil {
			e.remember(p.key, prev.namespace, prev.name, prev.count+1, now.Time)
			return
		}
		if !apierrors.IsNotFound(err) {
			e.log.V(1).Info("a repeated Event could not be counted", "reason", p.event.Reason, "error", err.Error())
			return
		}
	}
	if err := e.c.Create(ctx, p.event); err != nil {
		if ctx.Err() == nil {
			e.log.V(1).Info("an Event could not be posted", "reason", p.event.Reason, "type", p.event.Type, "error", err.Error())
		}
		return
	}
	e.remember(p.key, p.event.Namespace, p.event.Name, 1, now.Time)
}

// remember records a posted Event, to fold its repeats into it.
func (e *Events) remember(key eventKey, namespace, name string, count int32, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.posted[key] = &postedEvent{namespace: namespace, name: name, count: count, at: at}
}

// forgetOld drops the Events older than seriesWindow, at most once a
// minute; e.mu is held.
func (e *Events) forgetOld(now time.Time) {
	if now.Sub(e.swept) < time.Minute {
		return
	}
	e.swept = now
	for k, p := range e.posted {
		if now.Sub(p.at) > seriesWindow {
			delete(e.posted, k)
		}
	}
}

// reportDropped logs, once per burst, how many Events the full queue
// dropped.
func (e *Events) reportDropped() {
	e.mu.Lock()
	n := e.dropped
	e.dropped = 0
	e.mu.Unlock()
	if n > 0 {
		e.log.Info("WARNING: Events were dropped: more were posted than the API server took", "dropped", n)
	}
}
