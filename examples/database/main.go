// Command database is the Database operator of Kopf's tutorial, done the
// gopf way. A Database (db.example.gopf.dev/v1) becomes a StatefulSet and a
// headless Service, plus a backup CronJob while spec.backups is true; all
// three are adopted, so the garbage collector removes them with the
// Database.
//
//   - create_database (on create) makes the StatefulSet and the Service;
//   - scale (on update of spec.replicas) scales the StatefulSet;
//   - backups (on spec.backups, also at creation) creates or deletes the
//     CronJob;
//   - reconcile_database (level-based, woken by changes of the StatefulSet)
//     brings back a deleted StatefulSet and reports the ready replicas and
//     the Ready and Available conditions in the status.
//
// Run it on a local control plane with `make run EXAMPLE=database`; see
// README.md.
package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf"
	dbv1 "github.com/gopf-dev/gopf/examples/database/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
)

// What the operator needs; generate.sh turns these markers into
// config/rbac/role.yaml.
// +kubebuilder:rbac:groups=db.example.gopf.dev,resources=databases,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=db.example.gopf.dev,resources=databases/status,verbs=get;patch;update
// Adopt sets blockOwnerDeletion, which needs update on the owner's finalizers.
// +kubebuilder:rbac:groups=db.example.gopf.dev,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;create
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;create;delete
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

func main() {
	gopf.Main(registry(), dbv1.AddToScheme)
}

// handlers registers the operator's handlers. They read and write the
// children with c.Client, the manager's client: reads come from its cache.
func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, createDatabase, handlers.ID("create_database"))
	handlers.OnUpdate(reg, scale, handlers.Field("spec.replicas"), handlers.ID("scale"))
	handlers.OnField(reg, "spec.backups", backups, handlers.ID("backups"))
	handlers.OnReconcile(reg, reconcileDatabase, handlers.Owns(&appsv1.StatefulSet{}), handlers.ID("reconcile_database"))
	return reg
}

// createDatabase makes the StatefulSet and the Service of a new Database.
// It is safe to run again: children that exist already are left as they are.
func createDatabase(ctx context.Context, db *dbv1.Database, c *handlers.Cause) (any, error) {
	sts, err := statefulSet(db)
	if err != nil {
		return nil, handlers.Permanent(err) // a bad spec does not get better by retrying
	}
	if _, err := ensure(ctx, c.Client, db, sts); err != nil {
		return nil, err
	}
	if _, err := ensure(ctx, c.Client, db, service(db)); err != nil {
		return nil, err
	}
	c.Info("Provisioning", "created the StatefulSet and Service of %s %s", db.Spec.Engine, db.Spec.Version)
	return nil, nil // the status is reported by reconcileDatabase
}

// scale follows a change of spec.replicas.
func scale(ctx context.Context, db *dbv1.Database, c *handlers.Cause) (any, error) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: db.Name}}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, db.Spec.Replicas)
	err := c.Client.Patch(ctx, sts, client.RawPatch("application/merge-patch+json", []byte(patch)))
	if apierrors.IsNotFound(err) {
		return nil, nil // reconcileDatabase creates it with the new size
	}
	if err != nil {
		return nil, fmt.Errorf("scaling StatefulSet %s: %w", db.Name, err)
	}
	c.Info("Scaled", "scaled from %v to %d replicas", c.Old, db.Spec.Replicas)
	return nil, nil
}

// backups creates the backup CronJob when spec.backups becomes true and
// deletes it when it becomes false. It runs at creation too, when the
// Database is created with backups on.
func backups(ctx context.Context, db *dbv1.Database, c *handlers.Cause) (any, error) {
	job := backupCronJob(db)
	if db.Spec.Backups {
		if _, err := ensure(ctx, c.Client, db, job); err != nil {
			return nil, err
		}
		c.Info("BackupsOn", "backups run on the schedule %q", job.Spec.Schedule)
		return nil, nil
	}
	if err := client.IgnoreNotFound(c.Client.Delete(ctx, job)); err != nil {
		return nil, fmt.Errorf("deleting CronJob %s: %w", job.Name, err)
	}
	c.Info("BackupsOff", "deleted the backup CronJob")
	return nil, nil
}

// reconcileDatabase runs on every reconcile of a Database, including those
// caused by changes of its StatefulSet: it recreates a StatefulSet that is
// gone and reports its readiness in the status, writing only what changed.
// The cache it reads from may not show a StatefulSet created a moment ago,
// so only one that the create call really made counts as a repair.
func reconcileDatabase(ctx context.Context, db *dbv1.Database, c *handlers.Cause) (reconcile.Result, error) {
	if db.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	var sts appsv1.StatefulSet
	err := c.Client.Get(ctx, client.ObjectKeyFromObject(db), &sts)
	if apierrors.IsNotFound(err) {
		want, err := statefulSet(db)
		if err != nil {
			return reconcile.Result{}, err
		}
		// Its creation wakes this handler again, which then reports on it.
		created, err := ensure(ctx, c.Client, db, want)
		if created {
			c.Warn("Repairing", "the StatefulSet %s was missing; created it again", db.Name)
		}
		return reconcile.Result{}, err
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading StatefulSet %s: %w", db.Name, err)
	}

	status := db.Status.DeepCopy()
	status.ReadyReplicas = sts.Status.ReadyReplicas
	status.Endpoint = fmt.Sprintf("%s.%s.svc:%d", db.Name, db.Namespace, port(db.Spec.Engine))
	meta.SetStatusCondition(&status.Conditions, condition(dbv1.ConditionAvailable, sts.Status.ReadyReplicas > 0, db.Generation,
		"ReplicaReady", fmt.Sprintf("%d replica(s) accept connections", sts.Status.ReadyReplicas),
		"NoReplicaReady", "no replica is ready yet"))
	meta.SetStatusCondition(&status.Conditions, condition(dbv1.ConditionReady, sts.Status.ReadyReplicas >= db.Spec.Replicas, db.Generation,
		"AllReplicasReady", fmt.Sprintf("all %d replica(s) are ready", db.Spec.Replicas),
		"Provisioning", fmt.Sprintf("%d of %d replica(s) are ready", sts.Status.ReadyReplicas, db.Spec.Replicas)))
	if !equality.Semantic.DeepEqual(*status, db.Status) {
		c.Patch.SetStatus("readyReplicas", status.ReadyReplicas)
		c.Patch.SetStatus("endpoint", status.Endpoint)
		c.Patch.SetStatus("conditions", status.Conditions)
	}
	return reconcile.Result{}, nil
}

// condition builds a condition that is True with the first reason and
// message, or False with the second.
func condition(kind string, ok bool, generation int64, yesReason, yesMessage, noReason, noMessage string) metav1.Condition {
	if ok {
		return metav1.Condition{Type: kind, Status: metav1.ConditionTrue, Reason: yesReason, Message: yesMessage, ObservedGeneration: generation}
	}
	return metav1.Condition{Type: kind, Status: metav1.ConditionFalse, Reason: noReason, Message: noMessage, ObservedGeneration: generation}
}

// ensure creates child as a child of db unless it exists already, and
// reports whether it created it.
func ensure(ctx context.Context, k8s client.Client, db *dbv1.Database, child client.Object) (bool, error) {
	if err := objects.Adopt(db, child); err != nil {
		return false, err
	}
	err := k8s.Create(ctx, child)
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %T %s: %w", child, child.GetName(), err)
	}
	return true, nil
}
