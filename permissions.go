package gopf

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// clusterWide is the namespace whose rules CheckPermissions asks for when
// the operator watches all namespaces: one that nobody creates, so that
// only the rules bound cluster-wide count, as they alone hold in every
// namespace.
const clusterWide = "gopf-permission-check"

// PermissionsError is CheckPermissions' report: the rules the handlers
// need that the operator's user lacks.
type PermissionsError struct {
	// Missing are the rules lacking, as rbac.ClusterRoleYAML and
	// rbac.KubebuilderMarkers print them.
	Missing []rbacv1.PolicyRule
}

func (e *PermissionsError) Error() string {
	lines := rbac.MissingPermissions(e.Missing, nil)
	return fmt.Sprintf("the operator lacks %d permissions its handlers need:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// CheckPermissions asks the API server whether the manager's user may do
// what the handlers of reg need (rbac.Permissions, but leader
// election's Lease, which a Role of its own grants): in each namespace of
// opts.Namespaces if they are plain names, else in every namespace. It
// returns a *PermissionsError naming what is missing, another error if the
// API server could not be asked, and nil if nothing is missing.
// SetupWithManager runs it once when the manager starts and logs what it
// finds; call it before starting the manager to stop there instead.
func CheckPermissions(ctx context.Context, mgr manager.Manager, reg *handlers.Registry, opts ...reconcile.Options) error {
	var o reconcile.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	required, err := rbac.Permissions(reg, mgr.GetScheme(), mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	required = rbac.WithoutLeaderElection(required)
	namespaces, err := scope.CacheNamespaces(o.Namespaces)
	if err != nil {
		return err
	}
	if len(namespaces) == 0 {
		namespaces = []string{clusterWide}
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	var missing []rbacv1.PolicyRule
	for _, ns := range namespaces {
		granted, incomplete, err := rbac.SelfRules(ctx, c, ns)
		if err != nil {
			return err
		}
		lacking := rbac.MissingRules(required, granted)
		if incomplete {
			// Another authorizer may allow what the rules do not: ask it.
			if lacking, err = refused(ctx, c, ns, lacking); err != nil {
				return err
			}
		}
		missing = append(missing, lacking...)
	}
	if missing = rbac.MissingRules(missing, nil); len(missing) > 0 {
		return &PermissionsError{Missing: missing}
	}
	return nil
}

// refused returns the part of rules that a SelfSubjectAccessReview, one
// per verb and resource, says the user may not do in namespace.
func refused(ctx context.Context, c client.Client, namespace string, rules []rbacv1.PolicyRule) ([]rbacv1.PolicyRule, error) {
	if namespace == clusterWide {
		namespace = ""
	}
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		kept := r
		kept.Verbs = nil
		for _, verb := range r.Verbs {
			review := &authorizationv1.SelfSubjectAccessReview{}
			if len(r.NonResourceURLs) > 0 {
				review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: verb, Path: r.NonResourceURLs[0]}
			} else {
				resource, sub, _ := strings.Cut(r.Resources[0], "/")
				attrs := &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: r.APIGroups[0], Resource: resource, Subresource: sub}
				if len(r.ResourceNames) > 0 {
					attrs.Name = r.ResourceNames[0]
				}
				review.Spec.ResourceAttributes = attrs
			}
			if err := c.Create(ctx, review); err != nil {
				return nil, fmt.Errorf("asking the API server for the operator's permissions: %w", err)
			}
			if !review.Status.Allowed {
				kept.Verbs = append(kept.Verbs, verb)
			}
		}
		if len(kept.Verbs) > 0 {
			out = append(out, kept)
		}
	}
	return out, nil
}

// permissionCheck is the Runnable of SetupWithManager that checks the
// operator's permissions once at start and logs what is missing. It never
// stops the manager, and needs no leader lock: every replica reports.
type permissionCheck struct {
	mgr  manager.Manager
	reg  *handlers.Registry
	opts reconcile.Options
}

// Start checks and logs, then returns.
func (p permissionCheck) Start(ctx context.Context) error {
	log := p.mgr.GetLogger().WithName("gopf").WithName("rbac")
	err := CheckPermissions(ctx, p.mgr, p.reg, p.opts)
	var pe *PermissionsError
	switch {
	case errors.As(err, &pe):
		role, yamlErr := rbac.ClusterRoleYAML("manager-role-gopf", pe.Missing)
		if yamlErr != nil {
			role = []byte(yamlErr.Error())
		}
		log.Error(nil, "the operator lacks permissions its handlers need, and the requests that need them will fail; grant these rules (the ClusterRole below, as --print-rbac writes it, or the kubebuilder markers; an embedding main.go gets the flag from AddRBACFlags)",
			"missing", rbac.MissingPermissions(pe.Missing, nil), "clusterRole", string(role), "kubebuilderMarkers", rbac.KubebuilderMarkers(pe.Missing))
	case err != nil && ctx.Err() == nil:
		log.Info("could not check the operator's permissions; going on", "error", err.Error())
	}
	return nil
}

// NeedLeaderElection is false: the check runs in every replica.
func (permissionCheck) NeedLeaderElection() bool { return false }
