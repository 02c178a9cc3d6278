package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// metaWriter sends gopf's own writes of one kind (the finalizer, the state
// and results) and reads back only the object's metadata, the API server's
// PartialObjectMetadata form. controller-runtime's client does the same for
// a PartialObjectMetadata, but looks the kind's REST mapping up again at
// every request, and the manager's mapper answers by asking every API group
// it knows: a few kilobytes of garbage per write, more the more groups the
// cluster serves, which was a twentieth of gopf's CPU at 5,000 objects.
// The engine resolves the mapping once, when the kind's controller is set
// up, and keeps it (see Sender.Direct), as it keeps what it read of the
// kind's CRD then.
type metaWriter struct {
	resource   metadata.Getter
	gvr        schema.GroupVersionResource
	rest       rest.Interface // for update, which the metadata client lacks
	namespaced bool
}

// newMetaWriter returns the writer of the kind of mapping, sending through
// httpClient with cfg (the manager's: the same connection, credentials and
// client-side limits as its client).
func newMetaWriter(cfg *rest.Config, httpClient *http.Client, mapping *meta.RESTMapping) (*metaWriter, error) {
	c, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	rc := metadata.ConfigFor(cfg)
	rc.GroupVersion = &schema.GroupVersion{} // requests name their whole path
	rc.APIPath = "/"
	r, err := rest.RESTClientForConfigAndClient(rc, httpClient)
	if err != nil {
		return nil, err
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	return &metaWriter{resource: c.Resource(mapping.Resource), gvr: mapping.Resource, rest: r, namespaced: namespaced}, nil
}

// asMetadata asks the API server to answer with the object's metadata only.
const asMetadata = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// update sends data, a whole object in JSON, as an update of the object
// named, and returns the object's metadata after it.
func (w *metaWriter) update(ctx context.Context, namespace, name string, data []byte) (*metav1.PartialObjectMetadata, error) {
	path := []string{"apis", w.gvr.Group, w.gvr.Version}
	if w.gvr.Group == "" {
		path = []string{"api", w.gvr.Version}
	}
	if w.namespaced {
		path = append(path, "namespaces", namespace)
	}
	path = append(path, w.gvr.Resource, name)
	raw, err := w.rest.Put().AbsPath(path...).
		SetHeader("Content-Type", "application/json").
		SetHeader("Accept", asMetadata).
		Body(data).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var partial metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &partial); err != nil {
		return nil, fmt.Errorf("decoding the answer to an update as metadata: %w", err)
	}
	return &partial, nil
}

// patch sends a patch of type pt to the object named (its status with
// status) and returns the object's metadata after it.
func (w *metaWriter) patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, status bool) (*metav1.PartialObjectMetadata, error) {
	var r metadata.ResourceInterface = w.resource
	if w.namespaced {
		r = w.resource.Namespace(namespace)
	}
	var sub []string
	if status {
		sub = []string{"status"}
	}
	return r.Patch(ctx, name, pt, data, metav1.PatchOptions{}, sub...)
}
