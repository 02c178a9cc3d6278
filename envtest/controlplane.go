package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv is the environment variable naming the folder that holds the
// kube-apiserver and etcd binaries.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Options configure a control plane. The zero value starts one with no CRDs.
type Options struct {
	// CRDDirectoryPaths are folders (or files) of CRD manifests to install
	// before Start returns. A path that does not exist is an error.
	CRDDirectoryPaths []string

	// AssetsDir holds the kube-apiserver and etcd binaries. Default: the
	// KUBEBUILDER_ASSETS environment variable, else the newest bin/k8s/<ver>
	// folder of the nearest enclosing directory that has one.
	AssetsDir string

	// Verbose attaches the control plane's own output to this process's.
	Verbose bool

	// AdmissionPlugins are enabled in the API server besides its default
	// ones, such as OwnerReferencesPermissionEnforcement (which makes
	// setting blockOwnerDeletion need update on the owner's finalizers).
	AdmissionPlugins []string

	// APIServerFlags are flags given to kube-apiserver besides envtest's
	// own, by name without the dashes, such as {"watch-cache": {"false"}}
	// for watches served straight from etcd.
	APIServerFlags map[string][]string
}

// ControlPlane is a running kube-apiserver and etcd.
type ControlPlane struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Kubeconfig is the same access as a kubeconfig file's content.
	Kubeconfig []byte

	env *crenvtest.Environment

	mu      sync.Mutex
	clients map[*apiruntime.Scheme]client.Client // by scheme, for Env
}

// client returns a client of the control plane with scheme, one per scheme:
// the tests of a binary share it, as they share the control plane.
func (cp *ControlPlane) client(scheme *apiruntime.Scheme) (client.Client, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if c, ok := cp.clients[scheme]; ok {
		return c, nil
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if cp.clients == nil {
		cp.clients = map[*apiruntime.Scheme]client.Client{}
	}
	cp.clients[scheme] = c
	return c, nil
}

// Start starts a control plane and installs the CRDs. Stop it with Stop.
func Start(opts Options) (*ControlPlane, error) {
	assets, err := findAssets(opts.AssetsDir)
	if err != nil {
		return nil, err
	}
	for _, path := range opts.CRDDirectoryPaths {
		// Checked before anything starts: a control plane that then fails
		// to install the CRDs has to be stopped again.
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("the CRDs to install: %w", err)
		}
	}
	env := &crenvtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		AttachControlPlaneOutput: opts.Verbose,
	}
	if len(opts.AdmissionPlugins) > 0 {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", opts.AdmissionPlugins...)
	}
	for name, values := range opts.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, values...)
	}
	cfg, err := env.Start()
	if err != nil {
		// controller-runtime's Environment returns an error with the API
		// server and etcd still running when installing the CRDs fails.
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the control plane again: %w", stopErr))
		}
		return nil, fmt.Errorf("starting the control plane with binaries from %s: %w", assets, err)
	}
	return &ControlPlane{Config: cfg, Kubeconfig: env.KubeConfig, env: env}, nil
}

// Stop stops the API server and etcd and removes their data.
func (cp *ControlPlane) Stop() error {
	return cp.env.Stop()
}

// WriteKubeconfig writes the kubeconfig to path, creating its folder, so that
// kubectl and other tools can reach the control plane.
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, cp.Kubeconfig, 0o600)
}

// InstalledCRDs returns the group/version/kinds of the CRDs installed at start.
func (cp *ControlPlane) InstalledCRDs() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, crd := range cp.env.CRDs {
		for _, v := range crd.Spec.Versions {
			out = append(out, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
		}
	}
	return out
}

// kubeVersion is the Kubernetes version hack/setup-envtest.sh builds by
// default (its KUBE_VERSION), for the folder name errNoAssets suggests.
const kubeVersion = "1.37.0"

// errNoAssets explains how to get the binaries, in gopf's repository and in
// a module of one's own, which has gopf in its module cache but not its
// Makefile.
var errNoAssets = fmt.Errorf(`no kube-apiserver and etcd binaries found (nothing is downloaded at test time). To get them:
  - in a module of your own, build them from the Go module proxy with gopf's script (about 5 minutes on two cores; it prints their folder):
      bash "$(go list -m -f '{{.Dir}}' github.com/gopf-dev/gopf)/hack/setup-envtest.sh" "$PWD/bin/k8s/%s-%s-%s"
  - in gopf's repository: make envtest
  - or, where release downloads are allowed: go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use -p path
then set %s to the folder that holds them, or keep them in bin/k8s/<version>-<os>-<arch> of your module (envtest looks there, from the test's folder upwards)`,
	kubeVersion, runtime.GOOS, runtime.GOARCH, AssetsEnv)

// findAssets returns the folder holding the control-plane binaries.
func findAssets(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(AssetsEnv)
	}
	if dir != "" {
		if !hasBinaries(dir) {
			return "", fmt.Errorf("%s has no kube-apiserver and etcd: %w", dir, errNoAssets)
		}
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		matches, _ := filepath.Glob(filepath.Join(d, "bin", "k8s", "*-"+runtime.GOOS+"-"+runtime.GOARCH))
		for i := len(matches) - 1; i >= 0; i-- { // Glob sorts: newest version last
			if hasBinaries(matches[i]) {
				return matches[i], nil
			}
		}
		if filepath.Dir(d) == d {
			return "", errNoAssets
		}
	}
}

func hasBinaries(dir string) bool {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}
