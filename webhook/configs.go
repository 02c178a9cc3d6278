package webhook

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/internal/spec"
)

// gopf needs these permissions to manage the webhook configurations; `make
// manifests` adds them to config/rbac.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;create;update;delete

const (
	// defaultWebhookTimeout is the API server's own default.
	defaultWebhookTimeout = 10 * time.Second
	// cleanupTimeout bounds the removal of webhooks on shutdown.
	cleanupTimeout = 10 * time.Second
	// readyPoll is how often the config manager checks whether the server
	// serves yet.
	readyPoll = 100 * time.Millisecond
	// managedByLabel marks the configurations gopf manages.
	managedByLabel = "app.kubernetes.io/managed-by"
	// manager is the value of managedByLabel on what gopf creates, and the
	// organization of the certificates it issues.
	managerName = "gopf"
)

// rules returns the handler's rule: its kind's resource (or subresource),
// for its operations.
func rules(h *hook) []admissionregistrationv1.RuleWithOperations {
	var resources []string
	switch sub := h.reg.Options.SubResource; sub {
	case "":
		resources = []string{h.resource}
	case "*":
		resources = []string{h.resource, h.resource + "/*"}
	default:
		resources = []string{h.resource + "/" + sub}
	}
	ops := make([]admissionregistrationv1.OperationType, 0, len(h.reg.Options.Operations))
	for _, op := range h.reg.Options.Operations {
		ops = append(ops, admissionregistrationv1.OperationType(op))
	}
	scope := admissionregistrationv1.ClusterScope
	if h.namespaced {
		scope = admissionregistrationv1.NamespacedScope
	}
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{h.gvk.Group},
			APIVersions: []string{h.gvk.Version},
			Resources:   resources,
			Scope:       &scope,
		},
	}}
}

// webhookFor returns h's webhook, reached through clientConfig. It is built
// as a validating webhook; asMutating turns it into a mutating one.
func webhookFor(h *hook, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.ValidatingWebhook {
	opts := h.reg.Options
	failurePolicy := admissionregistrationv1.Fail
	if opts.IgnoreFailures {
		failurePolicy = admissionregistrationv1.Ignore
	}
	sideEffects := admissionregistrationv1.SideEffectClassNone
	if opts.SideEffects {
		sideEffects = admissionregistrationv1.SideEffectClassNoneOnDryRun
	}
	timeout := defaultWebhookTimeout
	if opts.WebhookTimeout > 0 {
		timeout = opts.WebhookTimeout
	}
	timeoutSeconds := int32(timeout / time.Second)
	objects := spec.ObjectSelector(opts.Labels)
	if objects == nil {
		objects = &metav1.LabelSelector{}
	}
	matchPolicy := admissionregistrationv1.Equivalent
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    h.name,
		ClientConfig:            clientConfig(h.path),
		Rules:                   rules(h),
		FailurePolicy:           &failurePolicy,
		MatchPolicy:             &matchPolicy,
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          objects,
		SideEffects:             &sideEffects,
		TimeoutSeconds:          &timeoutSeconds,
		AdmissionReviewVersions: []string{"v1"},
	}
}

// asMutating returns w as a mutating webhook. The API has two types for
// what is one webhook to gopf: the mutating one has every field of the
// validating one, and a reinvocation policy, which gopf leaves at Never.
func asMutating(w admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.MutatingWebhook {
	never := admissionregistrationv1.NeverReinvocationPolicy
	return admissionregistrationv1.MutatingWebhook{
		Name:                    w.Name,
		ClientConfig:            w.ClientConfig,
		Rules:                   w.Rules,
		FailurePolicy:           w.FailurePolicy,
		MatchPolicy:             w.MatchPolicy,
		NamespaceSelector:       w.NamespaceSelector,
		ObjectSelector:          w.ObjectSelector,
		SideEffects:             w.SideEffects,
		TimeoutSeconds:          w.TimeoutSeconds,
		AdmissionReviewVersions: w.AdmissionReviewVersions,
		MatchConditions:         w.MatchConditions,
		ReinvocationPolicy:      &never,
	}
}

// configurations builds the validating and mutating configuration named
// name for hooks and the create hooks, reached through clientConfig.
// With persistentOnly, only the webhooks of persistent handlers are kept
// (the create webhooks are not: an operator gone adds no finalizers and
// knows no shards). A configuration with no
// webhooks is not wanted in the cluster at all.
func configurations(
	name string, hooks []*hook, created []*createHook, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig, persistentOnly bool,
) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{managedByLabel: managerName}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: *meta.DeepCopy()}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: *meta.DeepCopy()}
	for _, h := range hooks {
		if persistentOnly && !h.reg.Options.Persistent {
			continue
		}
		w := webhookFor(h, clientConfig)
		if h.reg.Kind == spec.KindMutate {
			m.Webhooks = append(m.Webhooks, asMutating(w))
		} else {
			v.Webhooks = append(v.Webhooks, w)
		}
	}
	if !persistentOnly {
		// After the handlers' mutators, which may change what the engine
		// selects.
		for _, h := range created {
			m.Webhooks = append(m.Webhooks, h.webhook(clientConfig))
		}
	}
	return v, m
}

// configManager keeps the webhook configurations in the cluster: it creates
// or updates them once the server serves and whenever the CA bundle
// changes, and on shutdown removes the webhooks of non-persistent handlers.
// It runs on every replica, leader or not, since every replica serves.
type configManager struct {
	srv     *Server
	hooks   []*hook
	created []*createHook
	c       client.Client
	log     logr.Logger

	// putValidating and putMutating say whether the configurations were
	// put in the cluster (see keep). Only apply reads and writes them, and
	// the certificates call it one call at a time.
	putValidating, putMutating bool
}

func newConfigManager(mgr manager.Manager, srv *Server, hooks []*hook, created []*createHook) (*configManager, error) {
	c, err := clusterClient(mgr, admissionregistrationv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("gopf: a client for the webhook configurations: %w", err)
	}
	return &configManager{srv: srv, hooks: hooks, created: created, c: c, log: ctrl.Log.WithName("gopf").WithName("webhook")}, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves webhooks, so every replica keeps the configurations.
func (m *configManager) NeedLeaderElection() bool { return false }

// Start waits for the server, puts the configurations in place, keeps them
// up to date until ctx is done, then removes what is not persistent. The
// manager stops it before it stops the webhook server, so requests keep
// being answered until the webhooks are gone.
func (m *configManager) Start(ctx context.Context) error {
	if err := m.waitServing(ctx); err != nil {
		return nil // stopped before the server served: nothing was created
	}
	name := m.srv.opts.Name
	err := m.srv.certs.attach(ctx, func(ctx context.Context, bundle []byte) error { return m.apply(ctx, bundle, false) })
	if err != nil {
		// Take away what did get created rather than leave webhooks that
		// point at an operator about to stop.
		m.cleanUp()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("gopf: creating the webhook configurations %q: %w", name, err)
	}
	m.log.Info("webhook configurations are in place", "name", name, "webhooks", len(m.hooks), "createWebhooks", len(m.created))
	<-ctx.Done()
	m.cleanUp()
	return nil
}

// cleanUp stops following the CA bundle and removes the webhooks of
// non-persistent handlers. The manager's context is done by then, so it
// uses one of its own.
func (m *configManager) cleanUp() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	err := m.srv.certs.detach(ctx, func(ctx context.Context, bundle []byte) error { return m.apply(ctx, bundle, true) })
	if err != nil {
		m.log.Error(err, "removing the webhooks of non-persistent handlers", "name", m.srv.opts.Name)
	}
}

// waitServing returns once the webhook server accepts connections.
func (m *configManager) waitServing(ctx context.Context) error {
	ticker := time.NewTicker(readyPoll)
	defer ticker.Stop()
	check := m.srv.StartedChecker()
	for check(nil) != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
	return nil
}

// apply makes the configurations in the cluster what they should be with
// bundle as the CA bundle.
func (m *configManager) apply(ctx context.Context, bundle []byte, persistentOnly bool) error {
	cc := func(path string) admissionregistrationv1.WebhookClientConfig { return m.srv.clientConfig(path, bundle) }
	v, mu := configurations(m.srv.opts.Name, m.hooks, m.created, cc, persistentOnly)
	return errors.Join(
		keep(ctx, m.c, v, len(v.Webhooks), &m.putValidating, func(cur, want *admissionregistrationv1.ValidatingWebhookConfiguration) {
			cur.Webhooks = want.Webhooks
		}),
		keep(ctx, m.c, mu, len(mu.Webhooks), &m.putMutating, func(cur, want *admissionregistrationv1.MutatingWebhookConfiguration) {
			cur.Webhooks = want.Webhooks
		}),
	)
}

// keep puts want, which has that many webhooks, in the cluster; without
// webhooks, it deletes the configuration instead, but only if this manager
// put it there (*putThere): a configuration that would be empty from the
// start (the validating one of an operator with only create webhooks)
// costs no request at all, at start or stop.
func keep[T client.Object](ctx context.Context, c client.Client, want T, webhooks int, putThere *bool, setWebhooks func(cur, want T)) error {
	switch {
	case webhooks > 0:
		*putThere = true // even if the put fails: it may have got through
		return put(ctx, c, want, setWebhooks)
	case *putThere:
		if err := c.Delete(ctx, want); client.IgnoreNotFound(err) != nil {
			return err
		}
		*putThere = false
	}
	return nil
}

// put creates or updates want in the cluster, replacing the webhooks of
// an existing object.
func put[T client.Object](ctx context.Context, c client.Client, want T, setWebhooks func(cur, want T)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := reflect.New(reflect.TypeOf(want).Elem()).Interface().(T)
		err := c.Get(ctx, client.ObjectKeyFromObject(want), cur)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, want.DeepCopyObject().(T))
			if apierrors.IsAlreadyExists(err) {
				// Created meanwhile by another replica: update it instead.
				return apierrors.NewConflict(admissionregistrationv1.Resource("webhookconfigurations"), want.GetName(), err)
			}
			return err
		case err != nil:
			return err
		}
		labels := cur.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range want.GetLabels() {
			labels[k] = v
		}
		cur.SetLabels(labels)
		setWebhooks(cur, want)
		return c.Update(ctx, cur)
	})
}
