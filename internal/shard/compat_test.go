package shard

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// referenceSets are the shard sets of the golden values below.
var referenceSets = [3][]string{
	{"shard-a", "shard-b", "shard-c"},
	{"operator-7d9f8c6b5-abcde", "operator-7d9f8c6b5-fghij"},
	{"s0", "s1", "s2", "s3", "s4"},
}

// The golden values come from the reference itself (commit f1d25b34 of
// timebertt/kubernetes-controller-sharding): a scratch program outside this
// repository built the same objects as unstructured objects, took their
// keys with its key.ForObject and key.ForController, and the shard of each
// key with its consistenthash.New(nil, 0, set...).Hash for each set.
func TestAssignmentsMatchTheReferenceSharder(t *testing.T) {
	for _, tc := range []struct {
		gk         schema.GroupKind
		namespace  string
		name       string
		key        string
		referenced [3]string
	}{
		{gk("", "ConfigMap"), "default", "foo", "/ConfigMap/default/foo", [3]string{"shard-b", "operator-7d9f8c6b5-fghij", "s1"}},
		{gk("", "ConfigMap"), "default", "bar", "/ConfigMap/default/bar", [3]string{"shard-c", "operator-7d9f8c6b5-abcde", "s0"}},
		{gk("", "Secret"), "default", "foo", "/Secret/default/foo", [3]string{"shard-a", "operator-7d9f8c6b5-abcde", "s2"}},
		{gk("", "Secret"), "kube-system", "foo", "/Secret/kube-system/foo", [3]string{"shard-a", "operator-7d9f8c6b5-fghij", "s1"}},
		{gk("apps", "Deployment"), "default", "web", "apps/Deployment/default/web", [3]string{"shard-a", "operator-7d9f8c6b5-fghij", "s2"}},
		{gk("apps", "Deployment"), "team-a", "web", "apps/Deployment/team-a/web", [3]string{"shard-a", "operator-7d9f8c6b5-abcde", "s1"}},
		{gk("apps", "StatefulSet"), "team-a", "db", "apps/StatefulSet/team-a/db", [3]string{"shard-a", "operator-7d9f8c6b5-fghij", "s4"}},
		{gk("", "Namespace"), "", "team-b", "/Namespace//team-b", [3]string{"shard-a", "operator-7d9f8c6b5-abcde", "s0"}},
		{gk("rbac.authorization.k8s.io", "ClusterRole"), "", "admin", "rbac.authorization.k8s.io/ClusterRole//admin",
			[3]string{"shard-c", "operator-7d9f8c6b5-abcde", "s4"}},
		{gk("kopf.dev", "KopfExample"), "default", "kopf-example-1", "kopf.dev/KopfExample/default/kopf-example-1",
			[3]string{"shard-c", "operator-7d9f8c6b5-abcde", "s4"}},
		{gk("kopf.dev", "KopfExample"), "default", "kopf-example-2", "kopf.dev/KopfExample/default/kopf-example-2",
			[3]string{"shard-b", "operator-7d9f8c6b5-abcde", "s3"}},
		{gk("kopf.dev", "KopfExample"), "prod", "a", "kopf.dev/KopfExample/prod/a", [3]string{"shard-a", "operator-7d9f8c6b5-abcde", "s0"}},
		{gk("example.com", "Widget"), "w", "widget-0001", "example.com/Widget/w/widget-0001", [3]string{"shard-b", "operator-7d9f8c6b5-abcde", "s2"}},
		{gk("example.com", "Widget"), "w", "widget-0002", "example.com/Widget/w/widget-0002", [3]string{"shard-a", "operator-7d9f8c6b5-fghij", "s0"}},
		{gk("example.com", "Widget"), "w", "widget-0003", "example.com/Widget/w/widget-0003", [3]string{"shard-a", "operator-7d9f8c6b5-abcde", "s2"}},
		{gk("example.com", "Widget"), "w", "x", "example.com/Widget/w/x", [3]string{"shard-c", "operator-7d9f8c6b5-abcde", "s1"}},
		{gk("batch", "CronJob"), "ops", "nightly-backup-with-a-rather-long-name-for-testing",
			"batch/CronJob/ops/nightly-backup-with-a-rather-long-name-for-testing", [3]string{"shard-c", "operator-7d9f8c6b5-abcde", "s3"}},
	} {
		obj := &metav1.ObjectMeta{Namespace: tc.namespace, Name: tc.name}
		key, err := ObjectKey(tc.gk, obj)
		if err != nil || key != tc.key {
			t.Errorf("ObjectKey(%v, %s/%s) = %q, %v; the reference's key is %q", tc.gk, tc.namespace, tc.name, key, err, tc.key)
			continue
		}
		checkShards(t, key, tc.referenced)
	}
}

// Controlled pods with only a generateName: the reference keys them with
// their controller, skipping an owner that is not the controller.
func TestControlledObjectsMatchTheReferenceSharder(t *testing.T) {
	for _, tc := range []struct {
		namespace  string
		controller metav1.OwnerReference
		key        string
		referenced [3]string
	}{
		{"default", owner("apps/v1", "ReplicaSet", "web-5d4f8b"), "apps/ReplicaSet/default/web-5d4f8b",
			[3]string{"shard-c", "operator-7d9f8c6b5-abcde", "s2"}},
		{"team-a", owner("kopf.dev/v1", "KopfExample", "kopf-example-1"), "kopf.dev/KopfExample/team-a/kopf-example-1",
			[3]string{"shard-a", "operator-7d9f8c6b5-abcde", "s4"}},
		{"default", owner("v1", "ConfigMap", "foo"), "/ConfigMap/default/foo", [3]string{"shard-b", "operator-7d9f8c6b5-fghij", "s1"}},
	} {
		obj := &metav1.ObjectMeta{Namespace: tc.namespace, GenerateName: "child-", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller"}, tc.controller,
		}}
		key, err := ControllerKey(obj)
		if err != nil || key != tc.key {
			t.Errorf("ControllerKey(child of %v) = %q, %v; the reference's key is %q", tc.controller, key, err, tc.key)
			continue
		}
		checkShards(t, key, tc.referenced)
	}
}

// checkShards checks the shard of key on the rings of referenceSets.
func checkShards(t *testing.T, key string, want [3]string) {
	t.Helper()
	for i, set := range referenceSets {
		if got := NewRing(set...).ShardFor(key); got != want[i] {
			t.Errorf("on the ring of %v, %q belongs to %q; the reference sharder picks %q", set, key, got, want[i])
		}
	}
}

func gk(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }

func owner(apiVersion, kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: ptr.To(true)}
}
