//go:build linux

package bench

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gopf-dev/gopf/envtest"
)

// operatorGroup is the group of every operator user; the audit policy
// records the requests of this group only.
const operatorGroup = "gopf-bench:operators"

// auditPolicy records every request of the operators at the Metadata level
// (who, what verb, which object, the response code; no bodies), once per
// request, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  userGroups: ["` + operatorGroup + `"]
- level: None
`

// controlPlane is kube-apiserver and etcd with an audit log.
type controlPlane struct {
	env      *crenvtest.Environment
	admin    *rest.Config
	auditLog string
	// pids are kube-apiserver's and etcd's, whose CPU time is measured
	// per phase.
	pids []int
}

// controlPlaneBinaries are the processes of a control plane.
var controlPlaneBinaries = []string{"kube-apiserver", "etcd"}

// startControlPlane starts a control plane whose API server writes its
// audit log into dir, and installs the CRDs in crdDirs.
func startControlPlane(assets string, crdDirs []string, dir string) (*controlPlane, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	auditLog := filepath.Join(dir, "audit.log")
	if err := os.Remove(auditLog); err != nil && !os.IsNotExist(err) {
		return nil, err // a log of an earlier run in the same folder would be counted
	}
	env := &crenvtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking").
		// Never rotate: the log is read by offset, and a run at 10,000
		// objects writes more than the default 100 MB.
		Set("audit-log-maxsize", "1000000")
	admin, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane with binaries from %s: %w", assets, err)
	}
	pids, err := childPIDs(controlPlaneBinaries...)
	if err == nil && len(pids) < len(controlPlaneBinaries) {
		err = fmt.Errorf("found %v among this process's children", pids)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("finding the processes of the control plane: %w", err), env.Stop())
	}
	return &controlPlane{env: env, admin: admin, auditLog: auditLog, pids: slices.Collect(maps.Values(pids))}, nil
}

// cpu returns the CPU time kube-apiserver and etcd have used so far.
func (cp *controlPlane) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, pid := range cp.pids {
		t, err := cpuTime(pid)
		if err != nil {
			return 0, fmt.Errorf("reading the control plane's CPU time: %w", err)
		}
		sum += t
	}
	return sum, nil
}

// addOperatorUser provisions a cluster administrator named name in the
// operator group and writes its kubeconfig to path.
func (cp *controlPlane) addOperatorUser(name, path string) error {
	user, err := cp.env.AddUser(crenvtest.User{Name: name, Groups: []string{"system:masters", operatorGroup}}, nil)
	if err != nil {
		return fmt.Errorf("adding API user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func (cp *controlPlane) stop() error { return cp.env.Stop() }

// ErrNoAssets says that no control-plane binaries were found.
var ErrNoAssets = errors.New("no kube-apiserver and etcd found: run `make envtest` or set " + envtest.AssetsEnv)

// FindAssets returns the folder holding kube-apiserver and etcd: dir if set,
// else KUBEBUILDER_ASSETS, else the newest bin/k8s/<version>-<os>-<arch>
// under root.
func FindAssets(dir, root string) (string, error) {
	if dir == "" {
		dir = os.Getenv(envtest.AssetsEnv)
	}
	if dir == "" {
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "k8s", "*-"+runtime.GOOS+"-"+runtime.GOARCH))
		for i := len(matches) - 1; i >= 0 && dir == ""; i-- { // Glob sorts: newest last
			if hasBinaries(matches[i]) {
				dir = matches[i]
			}
		}
	}
	if dir == "" || !hasBinaries(dir) {
		return "", ErrNoAssets
	}
	return dir, nil
}

func hasBinaries(dir string) bool {
	for _, b := range controlPlaneBinaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}
