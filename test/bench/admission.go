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

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
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
// the configurations, named name, pointing at it by URL), its certificates
// in the work folder rather than in the system's temporary folder.
func (b *bench) webhookArgs(name string) []string {
	return []string{
		"--webhook-finalizers=always",
		"--webhook-configuration-name=" + name + ".bench.gopf.dev",
		"--webhook-cert-dir=" + filepath.Join(b.work, name+".webhook"),
	}
}

// waitForWebhook waits until the API server calls the operator's finalizer
// webhook (see awaitAdmission).
func (r *run) waitForWebhook(ctx context.Context) error {
	r.b.report.status("%s waiting for the finalizer webhook", r.label)
	err := r.b.awaitAdmission(ctx, r.kind, r.ns, r.proc, func(o client.Object) bool { return len(o.GetFinalizers()) > 0 })
	if err != nil {
		return fmt.Errorf("waiting for the API server to call the finalizer webhook %s: %w", r.webhookName(), err)
	}
	return nil
}

// awaitAdmission waits until an object of kind created in ns with
// server-side dry run comes back admitted as the operator process p's
// webhook admits it. The operator creates its webhook configuration once
// its server serves, and the API server takes a moment to pick it up; a
// create before then would get the finalizer from the engine, with a
// write. The dry runs are the administrator's, which are not audited.
func (b *bench) awaitAdmission(ctx context.Context, kind scenario.Kind, ns string, p *process, admitted func(client.Object) bool) error {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	tick := time.NewTicker(webhookPoll)
	defer tick.Stop()
	for {
		probe := kind.Initial(ns, "webhook-probe")
		err := b.c.Create(ctx, probe, client.DryRunAll)
		if err == nil && admitted(probe) {
			return nil
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("last dry run: %v: %w", err, ctx.Err())
		case <-tick.C:
		}
	}
}

// removeLeftWebhook deletes the run's MutatingWebhookConfiguration if the
// operator left it behind (gopf removes it when it stops gracefully), so
// that the API server calls no webhook for the next operator's objects.
func (r *run) removeLeftWebhook(ctx context.Context) error {
	return r.b.removeWebhook(ctx, r.webhookName(), r.label, true)
}

// removeWebhook deletes the MutatingWebhookConfiguration name if it is
// there, with a warning about whom it was left by when warn is set.
func (b *bench) removeWebhook(ctx context.Context, name, by string, warn bool) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err := b.c.Get(ctx, client.ObjectKeyFromObject(cfg), cfg)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if warn {
		b.log("warning: %s: the operator left its MutatingWebhookConfiguration %s after it stopped; deleting it", by, cfg.Name)
	}
	return client.IgnoreNotFound(b.c.Delete(ctx, cfg))
}
