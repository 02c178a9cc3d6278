package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	dbv1 "github.com/gopf-dev/gopf/examples/database/api/v1"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
}

var scheme = envtest.NewScheme(dbv1.AddToScheme)

func newDatabase(ns, name string, replicas int32, backups bool) *dbv1.Database {
	return &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Version: "16", Storage: "1Gi", Replicas: replicas, Backups: backups},
	}
}

func mergePatch(patch string) client.Patch {
	return client.RawPatch("application/merge-patch+json", []byte(patch))
}

// conditionIs reports whether the Database has the condition with that status.
func conditionIs(db *dbv1.Database, kind string, status metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(db.Status.Conditions, kind)
	return c != nil && c.Status == status && c.ObservedGeneration == db.Generation
}

// ownedBy checks that obj has db as its controlling owner, so that the
// garbage collector removes it with the Database.
func ownedBy(g Gomega, obj client.Object, db *dbv1.Database) {
	ref := metav1.GetControllerOf(obj)
	g.Expect(ref).NotTo(BeNil(), "%s has no controller", obj.GetName())
	g.Expect(ref.Kind).To(Equal("Database"))
	g.Expect(ref.UID).To(Equal(db.UID))
	g.Expect(*ref.BlockOwnerDeletion).To(BeTrue())
}

// eventReasons returns a function that lists the reasons of the Events about
// db; Events are posted asynchronously, so tests wait for them.
func eventReasons(ctx context.Context, k8s client.Client, db *dbv1.Database) func(Gomega) []string {
	return func(g Gomega) []string {
		events, err := envtest.Events(ctx, k8s, db)
		g.Expect(err).NotTo(HaveOccurred())
		var reasons []string
		for _, e := range events {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}
}

func TestCreatingADatabaseMakesAdoptedChildrenAndReportsItsStatus(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	db := newDatabase(ns, "orders", 2, true)
	db.Labels = map[string]string{"team": "shop"}
	g.Expect(k8s.Create(ctx, db)).To(Succeed())

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"}}
	g.Expect(envtest.WaitFor(ctx, k8s, sts, func(*appsv1.StatefulSet) bool { return true })).To(Succeed())
	ownedBy(g, sts, db)
	g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(2))
	g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("postgres:16"))
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
	g.Expect(sts.Spec.Template.Labels).To(HaveKeyWithValue("team", "shop"), "Adopt copies the owner's labels into pod templates")

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"}}
	g.Expect(envtest.WaitFor(ctx, k8s, svc, func(*corev1.Service) bool { return true })).To(Succeed())
	ownedBy(g, svc, db)
	backup := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-backup"}}
	g.Expect(envtest.WaitFor(ctx, k8s, backup, func(*batchv1.CronJob) bool { return true })).To(Succeed())
	ownedBy(g, backup, db)

	// No replica is ready: envtest runs no StatefulSet controller.
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool {
		return conditionIs(db, dbv1.ConditionReady, metav1.ConditionFalse) && conditionIs(db, dbv1.ConditionAvailable, metav1.ConditionFalse)
	})).To(Succeed())
	g.Expect(db.Status.Endpoint).To(Equal("orders." + ns + ".svc:5432"))
	// The typed status keeps no unknown fields, so gopf keeps its state in
	// annotations. They are written after the status, in a request of their
	// own, so they may come a moment after the conditions.
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool {
		return db.Annotations["gopf.dev/last-handled-configuration"] != ""
	})).To(Succeed())

	g.Eventually(eventReasons(ctx, k8s, db)).WithTimeout(envtest.DefaultTimeout).Should(ContainElement("Provisioning"))
}

func TestScalingTheDatabaseScalesTheStatefulSet(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	db := newDatabase(ns, "scaled", 1, false)
	g.Expect(k8s.Create(ctx, db)).To(Succeed())
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scaled"}}
	g.Expect(envtest.WaitFor(ctx, k8s, sts, func(*appsv1.StatefulSet) bool { return true })).To(Succeed())

	g.Expect(k8s.Patch(ctx, db, mergePatch(`{"spec":{"replicas":3}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, sts, func(sts *appsv1.StatefulSet) bool { return *sts.Spec.Replicas == 3 })).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool {
		c := meta.FindStatusCondition(db.Status.Conditions, dbv1.ConditionReady)
		return c != nil && c.Message == "0 of 3 replica(s) are ready"
	})).To(Succeed())
}

func TestTogglingBackupsCreatesAndDeletesTheCronJob(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	db := newDatabase(ns, "toggled", 1, false)
	g.Expect(k8s.Create(ctx, db)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool {
		return db.Annotations["gopf.dev/last-handled-configuration"] != ""
	})).To(Succeed())
	backup := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "toggled-backup"}}
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(backup), backup))).To(BeTrue(), "no backups asked for")

	g.Expect(k8s.Patch(ctx, db, mergePatch(`{"spec":{"backups":true}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, backup, func(*batchv1.CronJob) bool { return true })).To(Succeed())
	ownedBy(g, backup, db)

	g.Expect(k8s.Patch(ctx, db, mergePatch(`{"spec":{"backups":false}}`))).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, backup)).To(Succeed())
}

func TestADeletedStatefulSetComesBack(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	db := newDatabase(ns, "drifting", 2, false)
	g.Expect(k8s.Create(ctx, db)).To(Succeed())
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drifting"}}
	g.Expect(envtest.WaitFor(ctx, k8s, sts, func(*appsv1.StatefulSet) bool { return true })).To(Succeed())
	first := sts.UID

	g.Expect(k8s.Delete(ctx, sts)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, sts, func(sts *appsv1.StatefulSet) bool { return sts.UID != first })).To(Succeed())
	ownedBy(g, sts, db)
	g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(2))
	g.Eventually(eventReasons(ctx, k8s, db)).WithTimeout(envtest.DefaultTimeout).Should(ContainElement("Repairing"))
}

func TestReadyReplicasAndConditionsFollowTheStatefulSet(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	db := newDatabase(ns, "ready", 2, false)
	g.Expect(k8s.Create(ctx, db)).To(Succeed())
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ready"}}
	g.Expect(envtest.WaitFor(ctx, k8s, sts, func(*appsv1.StatefulSet) bool { return true })).To(Succeed())

	// Play the StatefulSet controller: one replica ready, then both.
	g.Expect(k8s.Status().Patch(ctx, sts, mergePatch(`{"status":{"replicas":2,"readyReplicas":1}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool {
		return db.Status.ReadyReplicas == 1 &&
			conditionIs(db, dbv1.ConditionAvailable, metav1.ConditionTrue) && conditionIs(db, dbv1.ConditionReady, metav1.ConditionFalse)
	})).To(Succeed())
	g.Expect(k8s.Status().Patch(ctx, sts, mergePatch(`{"status":{"replicas":2,"readyReplicas":2}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool {
		return db.Status.ReadyReplicas == 2 && conditionIs(db, dbv1.ConditionReady, metav1.ConditionTrue)
	})).To(Succeed())
}

func TestDeletingADatabaseLeavesItsChildrenToTheGarbageCollector(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	db := newDatabase(ns, "deleted", 1, true)
	g.Expect(k8s.Create(ctx, db)).To(Succeed())
	backup := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deleted-backup"}}
	g.Expect(envtest.WaitFor(ctx, k8s, backup, func(*batchv1.CronJob) bool { return true })).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, db, func(db *dbv1.Database) bool { return len(db.Status.Conditions) == 2 })).To(Succeed())

	// No delete handler, so no finalizer: the Database goes at once, and in a
	// real cluster the garbage collector deletes its children after it
	// (envtest has none; ownedBy shows the owner references it would follow).
	g.Expect(db.Finalizers).To(BeEmpty())
	g.Expect(k8s.Delete(ctx, db)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, db)).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
	ownedBy(g, backup, db)
}

func TestTheAPIServerRejectsInvalidDatabases(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme) // no operator: the CRD's schema does this
	ctx, k8s := env.Ctx, env.Client
	for field, edit := range map[string]func(*dbv1.Database){
		"spec.replicas": func(db *dbv1.Database) { db.Spec.Replicas = 6 },
		"spec.engine":   func(db *dbv1.Database) { db.Spec.Engine = "oracle" },
		"spec.storage":  func(db *dbv1.Database) { db.Spec.Storage = "a lot" },
	} {
		db := newDatabase(env.Namespace, "invalid", 1, false)
		edit(db)
		err := k8s.Create(ctx, db, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", field, err)
		g.Expect(err.Error()).To(ContainSubstring(field))
	}
	db := newDatabase(env.Namespace, "defaulted", 0, false)
	g.Expect(k8s.Create(ctx, db, client.DryRunAll)).To(Succeed())
	g.Expect(db.Spec.Replicas).To(BeEquivalentTo(1), "replicas default to 1")
}
