package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// RBACFlags are --print-rbac and --check-rbac: Main's, and
// gopf.AddRBACFlags for a main.go that builds its own manager.
type RBACFlags struct {
	print rbacFormat
	check string
}

// Bind defines the two flags on fs.
func (f *RBACFlags) Bind(fs *flag.FlagSet) {
	fs.Var(&f.print, "print-rbac", "Print the permissions the handlers need and exit: as a ClusterRole (manager-role-gopf) in YAML, or with --print-rbac=markers as kubebuilder RBAC markers for a project's controller file.")
	fs.StringVar(&f.check, "check-rbac", "", "Check that the Roles and ClusterRoles in this YAML file grant what the handlers need; print what is missing and exit, with status 1 if anything is.")
}

// Given reports whether either flag was given: the program prints or
// checks, and exits.
func (f *RBACFlags) Given() bool { return f.print != "" || f.check != "" }

// Run prints or checks, as the flags ask, for the handlers of reg with the
// Go types of scheme, writing to w; it needs no cluster. A check that
// finds permissions missing is an error that lists them.
func (f *RBACFlags) Run(w io.Writer, reg *handlers.Registry, scheme *runtime.Scheme) error {
	rules, err := rbac.Permissions(reg, scheme, nil)
	if err != nil {
		return err
	}
	if f.print != "" {
		// Leader election is granted by its own namespaced Role; a
		// ClusterRole would let the operator write any Lease.
		rules = rbac.WithoutLeaderElection(rules)
		if f.print == rbacMarkers {
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
	data, err := os.ReadFile(f.check)
	if err != nil {
		return fmt.Errorf("--check-rbac: %w", err)
	}
	granted, err := rbac.GrantedRules(data)
	if err != nil {
		return fmt.Errorf("--check-rbac %s: %w", f.check, err)
	}
	if missing := rbac.MissingPermissions(rules, granted); len(missing) > 0 {
		return fmt.Errorf("%s lacks %d permissions the handlers need:\n  %s", f.check, len(missing), strings.Join(missing, "\n  "))
	}
	fmt.Fprintf(w, "%s grants everything the handlers need\n", f.check)
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
