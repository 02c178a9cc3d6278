package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/gopf-dev/gopf/examples/database/api/v1"
)

// The children of a Database, as the operator wants them. Names are fixed
// (the Database's name, and <name>-backup for the CronJob), so that creating
// them again finds the existing ones. Database credentials are left out to
// keep the example short: a real operator would put them in a Secret.

// engines are the images and ports of the supported engines.
var engines = map[string]struct {
	image string
	port  int32
	dump  string
}{
	dbv1.EnginePostgres: {image: "postgres", port: 5432, dump: "pg_dumpall -h %s"},
	dbv1.EngineMySQL:    {image: "mysql", port: 3306, dump: "mysqldump --all-databases -h %s"},
}

// port is the port an engine listens on.
func port(engine string) int32 { return engines[engine].port }

// selector is what the StatefulSet and the Service select pods by.
func selector(db *dbv1.Database) map[string]string {
	return map[string]string{"app.kubernetes.io/name": db.Spec.Engine, "app.kubernetes.io/instance": db.Name}
}

// statefulSet is the StatefulSet running the database servers, each with a
// volume of spec.storage.
func statefulSet(db *dbv1.Database) (*appsv1.StatefulSet, error) {
	size, err := resource.ParseQuantity(db.Spec.Storage)
	if err != nil {
		return nil, fmt.Errorf("spec.storage %q: %w", db.Spec.Storage, err)
	}
	engine, ok := engines[db.Spec.Engine]
	if !ok {
		return nil, fmt.Errorf("spec.engine %q is not supported", db.Spec.Engine)
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: db.Name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(db.Spec.Replicas),
			ServiceName: db.Name,
			Selector:    &metav1.LabelSelector{MatchLabels: selector(db)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector(db)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:         "db",
					Image:        engine.image + ":" + db.Spec.Version,
					Ports:        []corev1.ContainerPort{{Name: "db", ContainerPort: engine.port}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/" + db.Spec.Engine}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}},
		},
	}, nil
}

// service is the headless Service that gives the replicas their DNS names.
func service(db *dbv1.Database) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: db.Name},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selector(db),
			Ports:     []corev1.ServicePort{{Name: "db", Port: port(db.Spec.Engine)}},
		},
	}
}

// backupCronJob dumps the database every night.
func backupCronJob(db *dbv1.Database) *batchv1.CronJob {
	engine := engines[db.Spec.Engine]
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: db.Name + "-backup"},
		Spec: batchv1.CronJobSpec{
			Schedule:          "0 3 * * *",
			ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers: []corev1.Container{{
					Name:    "backup",
					Image:   engine.image + ":" + db.Spec.Version,
					Command: []string{"sh", "-c", fmt.Sprintf(engine.dump, db.Name) + " > /dev/null"},
				}},
			}}}},
		},
	}
}
