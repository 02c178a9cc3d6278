package patch

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Sender sends the patches of the objects of one kind.
type Sender struct {
	gvk       schema.GroupVersionKind
	hasStatus bool
	writer    client.Client
	meta      *metaWriter // gopf's own patches; nil: through writer
}

// New returns the sender of the kind gvk, which has a status subresource
// if hasStatus, writing through writer.
func New(gvk schema.GroupVersionKind, hasStatus bool, writer client.Client) *Sender {
	return &Sender{gvk: gvk, hasStatus: hasStatus, writer: writer}
}

// Direct makes the sender send the patches that read back only metadata
// straight to the kind's resource (of mapping, resolved once), through
// httpClient with cfg (the manager's: the same connection, credentials and
// client-side limits as its client); see metaWriter.
func (s *Sender) Direct(cfg *rest.Config, httpClient *http.Client, mapping *meta.RESTMapping) error {
	w, err := newMetaWriter(cfg, httpClient, mapping)
	if err != nil {
		return err
	}
	s.meta = w
	return nil
}

// Split returns the object patch and the status patch to send for p;
// status goes into the object patch for kinds without a status
// subresource.
func (s *Sender) Split(p *spec.Patch) (objectPatch, statusPatch map[string]any) {
	objectPatch, statusPatch = spec.ObjectPatch(p), spec.StatusPatch(p)
	if len(statusPatch) > 0 && !s.hasStatus {
		objectPatch = state.MergeInto(objectPatch, map[string]any{"status": statusPatch})
		statusPatch = nil
	}
	return objectPatch, statusPatch
}

// SendPatch sends a handler patch: at most one status and one object patch.
func (s *Sender) SendPatch(ctx context.Context, obj client.Object, p *spec.Patch) error {
	var raw, final map[string]any
	if len(spec.Transforms(p)) > 0 {
		var err error
		if raw, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return err
		}
		if final, err = s.Transformed(raw, p); err != nil {
			return err
		}
	}
	objectPatch, statusPatch := s.Split(p)
	if len(statusPatch) > 0 || final != nil && s.hasStatus {
		if err := s.SendPart(ctx, obj, raw, final, map[string]any{"status": statusPatch}, true, false); err != nil {
			return err
		}
	}
	if len(objectPatch) > 0 || final != nil {
		return s.SendPart(ctx, obj, raw, final, objectPatch, false, false)
	}
	return nil
}

// Send applies one JSON merge patch, to the status subresource or the main
// resource; see SendAs for whole.
func (s *Sender) Send(ctx context.Context, obj client.Object, body map[string]any, status, whole bool) error {
	return s.SendAs(ctx, obj, types.MergePatchType, body, status, whole)
}

// SendAs sends body as a patch of type pt to the object or its status.
// With whole, obj is replaced by the response; otherwise only the
// response's metadata is requested (the API server's PartialObjectMetadata
// form, far cheaper to decode than the object), straight to the resource
// where the sender is Direct, and copied into obj, which is what gopf
// reads after a write.
func (s *Sender) SendAs(ctx context.Context, obj client.Object, pt types.PatchType, body any, status, whole bool) error {
	data, err := state.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding the patch for %s %s/%s: %w", s.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if !whole && s.meta != nil {
		resp, err := s.meta.patch(ctx, obj.GetNamespace(), obj.GetName(), pt, data, status)
		if err != nil {
			return fmt.Errorf("patching %s %s/%s: %w", s.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		copyMetadata(obj, &resp.ObjectMeta)
		return nil
	}
	p := client.RawPatch(pt, data)
	target := obj
	var partial *metav1.PartialObjectMetadata
	if !whole {
		partial = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()}}
		partial.SetGroupVersionKind(s.gvk)
		target = partial
	}
	if status {
		err = s.writer.Status().Patch(ctx, target, p)
	} else {
		err = s.writer.Patch(ctx, target, p)
	}
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", s.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if partial != nil {
		copyMetadata(obj, &partial.ObjectMeta)
	}
	return nil
}

// Replace sends next, whole, as an update of its object, guarded by its
// resourceVersion, and copies the response's metadata into next. The API
// server applies an update without turning the stored object into JSON,
// applying a patch to it and decoding the result, which costs it about a
// tenth more CPU per write of a small object (the profile of 5,000
// finalizer removals). An update replaces the whole object, so next must
// be exactly what the API server has at next's resourceVersion, but for
// the change it carries: an unstructured object read from the cache, with
// nothing written to it since (or the server refuses the update as a
// conflict), never a Go type, which drops the fields it lacks. Fields the
// cache left out on purpose (metadata.managedFields) are kept by the API
// server when an update omits them.
func (s *Sender) Replace(ctx context.Context, next *unstructured.Unstructured) error {
	if s.meta == nil {
		if err := s.writer.Update(ctx, next); err != nil {
			return fmt.Errorf("updating %s %s/%s: %w", s.gvk.Kind, next.GetNamespace(), next.GetName(), err)
		}
		return nil
	}
	data, err := next.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding %s %s/%s: %w", s.gvk.Kind, next.GetNamespace(), next.GetName(), err)
	}
	resp, err := s.meta.update(ctx, next.GetNamespace(), next.GetName(), data)
	if err != nil {
		return fmt.Errorf("updating %s %s/%s: %w", s.gvk.Kind, next.GetNamespace(), next.GetName(), err)
	}
	copyMetadata(next, &resp.ObjectMeta)
	return nil
}

// copyMetadata sets what a patch's response says of obj's metadata.
func copyMetadata(obj client.Object, from *metav1.ObjectMeta) {
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			kept := m.ManagedFields // the cache's choice, not the response's
			*m = *from
			m.ManagedFields = kept
			return
		}
	}
	obj.SetResourceVersion(from.ResourceVersion)
	obj.SetGeneration(from.Generation)
	obj.SetFinalizers(from.Finalizers)
	obj.SetLabels(from.Labels)
	obj.SetAnnotations(from.Annotations)
	obj.SetOwnerReferences(from.OwnerReferences)
	obj.SetDeletionTimestamp(from.DeletionTimestamp)
}
