package shard

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestCheckNamespaceRefusesOnlyANamespaceThatDoesNotExistAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	k8s := kubernetes.NewForConfigOrDie(apiServer(t))
	namespace, err := k8s.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shard-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckNamespace(ctx, k8s.CoordinationV1(), namespace.Name); err != nil {
		t.Errorf("the namespace %s exists, but: %v", namespace.Name, err)
	}
	leases, err := k8s.CoordinationV1().Leases(namespace.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) > 0 {
		t.Errorf("the check stored a Lease: %v", leases.Items[0].Name)
	}

	err = CheckNamespace(ctx, k8s.CoordinationV1(), "no-such-namespace")
	var notFound *NamespaceNotFoundError
	if !errors.As(err, &notFound) || notFound.Namespace != "no-such-namespace" {
		t.Fatalf("CheckNamespace(no-such-namespace) = %v, want a NamespaceNotFoundError", err)
	}
	if want := `the namespace "no-such-namespace" of the ring's Leases does not exist`; err.Error() != want {
		t.Errorf("the error says %q, want %q", err, want)
	}
}
