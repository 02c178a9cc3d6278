package patch

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// metaWriter sends gopf's own patches of one kind (the finalizer, the state
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
	return &metaWriter{resource: c.Resource(mapping.Resource), namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}, nil
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
