package gopf

import (
	"flag"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/cli"
)

// AddRBACFlags defines Main's --print-rbac and --check-rbac on fs
// (flag.CommandLine in a kubebuilder main.go), for a main.go that builds its
// own manager and adds gopf with SetupWithManager: the permissions the
// handlers need, printed as a ClusterRole or as kubebuilder RBAC markers,
// or checked against the Roles and ClusterRoles of a YAML file, with no
// cluster. They compute what the start-up check of SetupWithManager
// (CheckPermissions) asks the API server for, so that a role one accepts
// the other accepts too.
//
// It returns the function that, once fs is parsed, does what the flags ask:
// it prints or checks, writing to w, for the handlers of reg with the Go
// types of scheme (nil: client-go's), and returns true, if either flag was
// given; the program should then exit, with status 1 if err is not nil (a
// check that finds permissions missing lists them in err). Without either
// flag it does nothing and returns false.
//
//	runRBAC := gopf.AddRBACFlags(flag.CommandLine)
//	flag.Parse()
//	if ran, err := runRBAC(os.Stdout, reg, scheme); ran {
//		// print err and exit 1 if there is one, else exit 0
//	}
func AddRBACFlags(fs *flag.FlagSet) func(w io.Writer, reg *handlers.Registry, scheme *runtime.Scheme) (ran bool, err error) {
	var flags cli.RBACFlags
	flags.Bind(fs)
	return func(w io.Writer, reg *handlers.Registry, scheme *runtime.Scheme) (bool, error) {
		if !flags.Given() {
			return false, nil
		}
		return true, flags.Run(w, reg, scheme)
	}
}
