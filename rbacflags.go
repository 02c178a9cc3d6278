package gopf

import (
	"flag"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/cli"
)

// RBACFlags are Main's --print-rbac and --check-rbac for a main.go that
// builds its own manager and adds gopf with SetupWithManager: the
// permissions the handlers need, printed as a ClusterRole or as kubebuilder
// RBAC markers, or checked against the Roles and ClusterRoles of a YAML
// file, with no cluster. They compute what the start-up check of
// SetupWithManager (CheckPermissions) asks the API server for, so that a
// role one accepts the other accepts too. See AddRBACFlags.
type RBACFlags struct {
	flags cli.RBACFlags
}

// AddRBACFlags defines --print-rbac and --check-rbac on fs
// (flag.CommandLine in a kubebuilder main.go). After fs is parsed, Run
// does what they ask:
//
//	rbacFlags := gopf.AddRBACFlags(flag.CommandLine)
//	flag.Parse()
//	if ran, err := rbacFlags.Run(os.Stdout, reg, scheme); ran {
//		// print err and exit 1 if there is one, else exit 0
//	}
func AddRBACFlags(fs *flag.FlagSet) *RBACFlags {
	f := &RBACFlags{}
	f.flags.Bind(fs)
	return f
}

// Run prints or checks, writing to w, for the handlers of reg with the Go
// types of scheme (nil: client-go's), and returns true, if either flag was
// given; the program should then exit, with status 1 if err is not nil (a
// check that finds permissions missing lists them in err). Without either
// flag it does nothing and returns false.
func (f *RBACFlags) Run(w io.Writer, reg *handlers.Registry, scheme *runtime.Scheme) (ran bool, err error) {
	if !f.flags.Given() {
		return false, nil
	}
	return true, f.flags.Run(w, reg, scheme)
}
