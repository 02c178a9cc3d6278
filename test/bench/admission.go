//go:build linux

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// webhookPoll is how often the benchmark checks whether the API server
// calls the gopf operator's finalizer webhook yet.
const webhookPoll = 100 * time.Millisecond

// admits reports whether the run's operator adds its finalizer at
// admission: gopf in a scenario with AdmissionFinalizers.
func (r *run) admits() bool { return r.sc.AdmissionFinalizers && r.op.Name == Gopf.Name }

// webhookName names the run's webhook configurations: one per run, so that
// the benchmark knows what to look for after the operator stopped.
func (r *run) webhookName() string { return r.id + ".bench.gopf.dev" }

// webhookArgs are the gopf flags that turn the finalizer webhook on: gopf's
// webhook server in dev mode (a free port on 127.0.0.1, a self-signed CA,
// the configurations pointing at it by URL), its certificates in the work
// folder rather than in the system's temporary folder.
func (r *run) webhookArgs() []string {
	return []string{
		"--webhook-finalizers=always",
		"--webhook-configuration-name=" + r.webhookName(),
		"--webhook-cert-dir=" + filepath.Join(r.b.work, r.id+".webhook"),
	}
}

// waitForWebhook waits until the API server calls the operator's finalizer
// webhook: until an object created with server-side dry run comes back
// with a finalizer. The operator creates its webhook configuration once
// its server serves, and the API server takes a moment to pick it up; a
// create before then would get the finalizer from the engine, with a
// write. The dry runs are the administrator's, which are not audited.
func (r *run) waitForWebhook(ctx context.Context) error {
	r.b.report.status("%s waiting for the finalizer webhook", r.label)
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	tick := time.NewTicker(webhookPoll)
	defer tick.Stop()
	for {
		probe := r.kind.Initial(r.ns, "webhook-probe")
		err := r.b.c.Create(ctx, probe, client.DryRunAll)
		if err == nil && len(probe.GetFinalizers()) > 0 {
			return nil
		}
		select {
		case <-r.proc.exited:
			return r.proc.exitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for the API server to call the finalizer webhook %s (last dry run: %v): %w", r.webhookName(), err, ctx.Err())
		case <-tick.C:
		}
	}
}

// removeLeftWebhook deletes the run's MutatingWebhookConfiguration if the
// operator left it behind (gopf removes it when it stops gracefully), so
// that the API server calls no webhook for the next operator's objects.
func (r *run) removeLeftWebhook(ctx context.Context) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: r.webhookName()}}
	err := r.b.c.Get(ctx, client.ObjectKeyFromObject(cfg), cfg)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r.b.log("warning: %s: the operator left its MutatingWebhookConfiguration %s after it stopped; deleting it", r.label, cfg.Name)
	return client.IgnoreNotFound(r.b.c.Delete(ctx, cfg))
}
