package shard

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// NamespaceNotFoundError means that the namespace meant for the ring's
// Leases does not exist: no member could ever write its Lease there.
type NamespaceNotFoundError struct {
	// Namespace is the namespace that does not exist.
	Namespace string
}

func (e *NamespaceNotFoundError) Error() string {
	return fmt.Sprintf("the namespace %q of the ring's Leases does not exist", e.Namespace)
}

// CheckNamespace returns a *NamespaceNotFoundError if namespace does not
// exist. A Member in such a namespace retries creating its Lease every
// RetryPeriod and never joins, with an error in the log each time; the
// check turns that into an error at start.
//
// It asks with a dry-run create of a Lease, which the API server refuses
// with NotFound for the namespace when it does not exist (its namespace
// lifecycle admission) and otherwise stores nothing. That needs only the
// create on Leases a member needs anyway, where a read of the namespace
// would need get on namespaces, cluster-wide, for this alone. Any other
// error is not reported here: the member's own requests run into it and
// report it as they always have, so the check adds no way to fail.
func CheckNamespace(ctx context.Context, leases coordinationv1client.LeasesGetter, namespace string) error {
	probe := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "gopf-namespace-check-"}}
	_, err := leases.Leases(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if namespaceNotFound(err, namespace) {
		return &NamespaceNotFoundError{Namespace: namespace}
	}
	return nil
}

// namespaceNotFound reports whether err is the API server's NotFound for
// the namespace itself, not for some other object.
func namespaceNotFound(err error, namespace string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == namespace
}
