package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// printRBAC implements --print-rbac and --check-rbac, writing to w; it needs no
// cluster.
func printRBAC(w io.Writer, reg *handlers.Registry, scheme *runtime.Scheme, f *Flags) error {
	rules, err := rbac.Permissions(reg, scheme, nil)
	if err != nil {
		return err
	}
	if f.printRBAC != "" {
		// Leader election is granted by its own namespaced Role; a
		// ClusterRole would let the operator write any Lease.
		rules = rbac.WithoutLeaderElection(rules)
		if f.printRBAC == rbacMarkers {
			_, err = io.WriteString(w, rbac.KubebuilderMarkers(rules))
			return err
		}
		out, err := rbac.ClusterRoleYAML("manager-role-gopf", rules)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	data, err := os.ReadFile(f.checkRBAC)
	if err != nil {
		return fmt.Errorf("--check-rbac: %w", err)
	}
	granted, err := rbac.GrantedRules(data)
	if err != nil {
		return fmt.Errorf("--check-rbac %s: %w", f.checkRBAC, err)
	}
	if missing := rbac.MissingPermissions(rules, granted); len(missing) > 0 {
		return fmt.Errorf("%s lacks %d permissions the handlers need:\n  %s", f.checkRBAC, len(missing), strings.Join(missing, "\n  "))
	}
	fmt.Fprintf(w, "%s grants everything the handlers need\n", f.checkRBAC)
	return nil
}

// rbacFormat is the value of --print-rbac: "" (do not print), rbacYAML
// (--print-rbac alone) or rbacMarkers.
type rbacFormat string

const (
	rbacYAML    rbacFormat = "yaml"
	rbacMarkers rbacFormat = "markers"
)

func (r *rbacFormat) String() string { return string(*r) }

// Set takes yaml or markers, and true (the flag alone) for yaml.
func (r *rbacFormat) Set(v string) error {
	switch v {
	case "true", string(rbacYAML):
		*r = rbacYAML
	case string(rbacMarkers):
		*r = rbacMarkers
	case "false":
		*r = ""
	default:
		return fmt.Errorf("--print-rbac is yaml or markers, not %q", v)
	}
	return nil
}

// IsBoolFlag lets --print-rbac stand alone.
func (r *rbacFormat) IsBoolFlag() bool { return true }
