package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/scaffold"
)

// The projects the captured kubebuilder commands scaffold, with gopf's
// answers applied, are working operators: each builds, and its manager
// (cmd/main.go, as "make run" starts it) runs against a control plane, runs
// its handlers on an object created there and serves its admission
// handlers. The three projects share one control plane and the go
// command's build cache, and each is built once:
//
//   - init, create api and create webhook of a kind of the project (Database):
//     its own "make test" passes too;
//   - edit on a plain go/v4 project (init, create api and create webhook all
//     go/v4's): "make build" passes with no step between edit and it, and
//     the manager runs go/v4's Reconciler and webhooks beside a gopf handler;
//   - create api and create webhook of a built-in kind (ConfigMap): its
//     handlers' test passes, and the handlers see only the ConfigMaps their
//     label selector picks, without a finalizer.
//
// Set GOPF_KEEP_SCAFFOLD=1 to keep the projects for a look. It needs the
// envtest binaries (KUBEBUILDER_ASSETS or bin/k8s, from "make envtest") and
// controller-gen in bin/ ("make controller-gen"); "make test" provides both.
// It downloads modules (from the Go module proxy) and builds, so -short
// skips it.
func TestScaffoldedProjectsRunTheirHandlers(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds three scaffolded projects and runs their managers (a few minutes with a warm module cache)")
	}
	root := repoRoot(t)
	assets := envtestAssets(t, root)
	controllerGen := newestFile(filepath.Join(root, "bin"), "controller-gen*")
	if controllerGen == "" {
		t.Skip("no controller-gen in " + filepath.Join(root, "bin") + `: run "make controller-gen" (make test does)`)
	}
	for _, tool := range []string{"make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
	ctrllog.SetLogger(logr.Discard()) // envtest's own logging is of no use here
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cp := startControlPlane(t, assets)
	certDir, caPool := webhookCert(t)

	t.Run("init, create api, create webhook", func(t *testing.T) {
		p := newProject(t, ctx, runChain(t, testOptions(t)).final(), controllerGen, assets)
		// go/v4's init runs go mod tidy after the plugins have written their
		// files; so does this test, once, at the end.
		p.sh("go", "mod", "tidy")
		if out := p.sh("gofmt", "-l", "."); strings.TrimSpace(out) != "" {
			t.Errorf("files gofmt would change:\n%s", out)
		}
		out := p.sh("make", "test", "build")
		for _, pkg := range []string{"example.com/demo/internal/controller", "example.com/demo/internal/webhook/v1"} {
			if !strings.Contains(out, "ok  \t"+pkg) {
				t.Errorf("make test did not pass %s:\n%s", pkg, out)
			}
		}
		if manifests, err := os.ReadFile(filepath.Join(p.dir, "config", "webhook", "manifests.yaml")); err != nil {
			t.Errorf("make manifests wrote no webhook manifests: %v", err)
		} else if !strings.Contains(string(manifests), "path: /validate/db.example.com/v1/database") {
			t.Errorf("the webhook manifests do not point at gopf's paths:\n%s", manifests)
		}
		cp.installCRDs(t, filepath.Join(p.dir, "config", "crd", "bases"))

		m := p.startManager(cp, certDir, caPool)
		db := cp.create(t, ctx, "db.example.com/v1", "Database", "scaffolded", nil, map[string]any{"spec": map[string]any{}})
		m.waitForLog(t, "Database created", db.GetName())
		cp.deleteAndWait(t, ctx, db) // gopf's finalizer goes once the delete handler has run
		m.review(t, "/mutate/db.example.com/v1/database", db, "databases")
		m.review(t, "/validate/db.example.com/v1/database", db, "databases")
	})

	t.Run("edit on a plain go/v4 project", func(t *testing.T) {
		f := loadFixture(t, "create-webhook") // go/v4's project: the plugin answered nothing
		edit := f.withArgs()
		edit.Command = "edit"
		files := overlay(f.Universe, mustSucceed(t, call(t, edit.encode(t), testOptions(t))).Universe)
		// What a user adds next to their Reconciler: a gopf handler.
		files["cmd/main.go"] = strings.Replace(strings.Replace(files["cmd/main.go"],
			"import (\n", "import (\n\t\"context\"\n", 1),
			"// +gopf:scaffold:handlers", `handlers.OnCreate(reg, func(ctx context.Context, db *dbv1.Database, c *handlers.Cause) (any, error) {
		c.Log.Info("Database created, said gopf")
		return nil, nil
	})
	// +gopf:scaffold:handlers`, 1)
		p := newProject(t, ctx, files, controllerGen, assets)
		p.readonlyModules = true // no go mod tidy, no -mod=mod: as a user runs make
		p.sh("make", "build")
		cp.installCRDs(t, filepath.Join(p.dir, "config", "crd", "bases"))

		m := p.startManager(cp, certDir, caPool)
		db := cp.create(t, ctx, "db.example.com/v1", "Database", "edited", nil, map[string]any{"spec": map[string]any{}})
		m.waitForLog(t, "Database created, said gopf", db.GetName())
		m.review(t, "/mutate-db-example-com-v1-database", db, "databases")
		m.review(t, "/validate-db-example-com-v1-database", db, "databases")
	})

	t.Run("by hand, as docs/existing-project.md says", func(t *testing.T) {
		doc := docSnippets(t, filepath.Join(root, existingProjectDoc))
		files := overlay(loadFixture(t, "create-webhook").Universe, map[string]string{ // go/v4's project
			"internal/controller/database_handlers.go":      doc["handlers-file"],
			"internal/controller/database_handlers_test.go": doc["handlers-test"],
		})
		files["cmd/main.go"] = strings.Replace(strings.Replace(files["cmd/main.go"],
			"import (\n", "import (\n"+doc["main-imports"], 1),
			"\t// +kubebuilder:scaffold:builder", doc["main-setup"]+"\t// +kubebuilder:scaffold:builder", 1)
		p := newProject(t, ctx, files, controllerGen, assets)
		// The guide's go get, with the checkout in place of a release:
		// gopf is not published where this test runs.
		p.sh("go", "mod", "edit", "-require=github.com/gopf-dev/gopf@"+scaffold.PlaceholderVersion, "-replace=github.com/gopf-dev/gopf="+root)
		p.sh("go", "mod", "tidy")
		p.sh("make", "build") // manifests, generate, fmt, vet, build
		role, err := os.ReadFile(filepath.Join(p.dir, "config", "rbac", "role.yaml"))
		if err != nil || !strings.Contains(string(role), "customresourcedefinitions") || !strings.Contains(string(role), "databases/finalizers") {
			t.Errorf("make manifests did not make a role of the guide's markers (%v):\n%s", err, role)
		}
		if out := p.sh("go", "test", "-count=1", "./internal/controller/"); !strings.Contains(out, "ok  \texample.com/demo/internal/controller") {
			t.Errorf("go/v4's suite with the guide's spec did not pass:\n%s", out)
		}
		cp.installCRDs(t, filepath.Join(p.dir, "config", "crd", "bases"))

		m := p.startManager(cp, certDir, caPool)
		db := cp.create(t, ctx, "db.example.com/v1", "Database", "by-hand", nil, map[string]any{"spec": map[string]any{}})
		m.waitForLog(t, "Database created, by hand", db.GetName())
	})

	t.Run("built-in kind", func(t *testing.T) {
		files := runCaptures(t, testOptions(t), "builtin-init", "builtin-create-api", "builtin-create-webhook").final()
		p := newProject(t, ctx, files, controllerGen, assets)
		p.sh("go", "mod", "tidy")
		p.sh("make", "build")
		if out := p.sh("go", "test", "-count=1", "./internal/controller/"); !strings.Contains(out, "ok  \texample.com/demo/internal/controller") {
			t.Errorf("the handlers' test did not pass:\n%s", out)
		}

		m := p.startManager(cp, certDir, caPool)
		picked := cp.create(t, ctx, "v1", "ConfigMap", "picked", map[string]string{"example.com/managed": "true"}, nil)
		m.waitForLog(t, "ConfigMap created", picked.GetName())
		if err := cp.client.Get(ctx, client.ObjectKeyFromObject(picked), picked); err != nil {
			t.Fatal(err)
		}
		if len(picked.GetFinalizers()) != 0 {
			t.Errorf("gopf put finalizers %v on a ConfigMap: the delete handler of a built-in kind is optional", picked.GetFinalizers())
		}
		m.review(t, "/mutate/core/v1/configmap", picked, "configmaps")
		m.review(t, "/validate/core/v1/configmap", picked, "configmaps")
	})
}

// controlPlane is the API server the managers run against.
type controlPlane struct {
	cfg        *rest.Config
	client     client.Client
	kubeconfig string // a kubeconfig file for it, for the managers
}

func startControlPlane(t *testing.T, assets string) *controlPlane {
	t.Helper()
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	user, err := env.AddUser(envtest.User{Name: "scaffolded-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{cfg: cfg, client: c, kubeconfig: file}
}

// installCRDs installs the CRDs of a project, as "make install" would.
func (cp *controlPlane) installCRDs(t *testing.T, dir string) {
	t.Helper()
	if _, err := envtest.InstallCRDs(cp.cfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing the CRDs of %s: %v", dir, err)
	}
}

// create creates an object of the kind in namespace default, with the
// fields of content besides its metadata.
func (cp *controlPlane) create(
	t *testing.T, ctx context.Context, apiVersion, kind, name string, labels map[string]string, content map[string]any,
) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: content}
	if obj.Object == nil {
		obj.Object = map[string]any{}
	}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace("default")
	obj.SetName("e2e-" + name)
	obj.SetLabels(labels)
	if err := cp.client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s %s: %v", kind, obj.GetName(), err)
	}
	return obj
}

// deleteAndWait deletes obj and waits until it is gone.
func (cp *controlPlane) deleteAndWait(t *testing.T, ctx context.Context, obj *unstructured.Unstructured) {
	t.Helper()
	if err := cp.client.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool {
		return apierrors.IsNotFound(cp.client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy()))
	}, func() string {
		return fmt.Sprintf("%s %s is still there (finalizers %v)", obj.GetKind(), obj.GetName(), obj.GetFinalizers())
	})
}

// project is a scaffolded project written to a folder.
type project struct {
	t   *testing.T
	ctx context.Context
	dir string
	env []string
	// readonlyModules runs the go command as a user's shell does, without
	// GOFLAGS=-mod=mod: go.mod must be complete.
	readonlyModules bool
}

// newProject writes files to a new folder, with the checkout's
// controller-gen where the project's Makefile looks for it.
func newProject(t *testing.T, ctx context.Context, files map[string]string, controllerGen, assets string) *project {
	t.Helper()
	dir := t.TempDir()
	if os.Getenv("GOPF_KEEP_SCAFFOLD") != "" {
		var err error
		if dir, err = os.MkdirTemp("", "gopf-scaffold-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("the scaffolded project is in %s", dir)
	}
	for p, content := range files {
		file := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	useControllerGen(t, dir, controllerGen)
	env := append(isolatedEnv(t, dir), "GOWORK=off", "KUBEBUILDER_ASSETS="+assets)
	return &project{t: t, ctx: ctx, dir: dir, env: env}
}

// sh runs a command in the project and returns its output; it fails the
// test if the command fails.
func (p *project) sh(name string, args ...string) string {
	p.t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(p.ctx, name, args...)
	cmd.Dir = p.dir
	cmd.Env = p.goEnv()
	out, err := cmd.CombinedOutput()
	p.t.Logf("%s %s: %s", name, strings.Join(args, " "), time.Since(start).Round(time.Second))
	if err != nil {
		p.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (p *project) goEnv() []string {
	var env []string
	for _, kv := range p.env {
		if !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	if p.readonlyModules {
		return env
	}
	return append(env, "GOFLAGS=-mod=mod")
}

// runningManager is the project's manager binary (bin/manager, from make
// build), running against the control plane.
type runningManager struct {
	port   int
	client *http.Client
	out    *syncBuffer
}

// startManager runs bin/manager with the flags a user gives "make run"
// plus a webhook certificate, and waits until its webhook server answers.
func (p *project) startManager(cp *controlPlane, certDir string, ca *x509.CertPool) *runningManager {
	t := p.t
	t.Helper()
	port := freePort(t)
	out := &syncBuffer{}
	cmd := exec.Command(filepath.Join(p.dir, "bin", "manager"),
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--webhook-port="+strconv.Itoa(port), "--webhook-cert-path="+certDir)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.kubeconfig)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the manager's output:\n%s", out.String())
		}
	})
	m := &runningManager{port: port, out: out, client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}},
	}}
	waitFor(t, 90*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("the manager exited:\n%s", out.String())
		default:
		}
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12})
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}, func() string { return "the manager's webhook server does not answer:\n" + out.String() })
	return m
}

// waitForLog waits for a line of the manager's output that holds all of
// the parts.
func (m *runningManager) waitForLog(t *testing.T, parts ...string) {
	t.Helper()
	waitFor(t, 60*time.Second, func() bool {
		for _, line := range strings.Split(m.out.String(), "\n") {
			all := true
			for _, s := range parts {
				all = all && strings.Contains(line, s)
			}
			if all {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("no line of the manager's output holds %q:\n%s", parts, m.out.String())
	})
}

// review sends the webhook path an AdmissionReview of the creation of obj,
// as the API server would, and expects it allowed.
func (m *runningManager) review(t *testing.T, path string, obj *unstructured.Unstructured, resource string) {
	t.Helper()
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	gvk := obj.GroupVersionKind()
	uid := "e2e" + strings.ReplaceAll(path, "/", "-")
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(uid),
			Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource},
			Name:      obj.GetName(),
			Namespace: obj.GetNamespace(),
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", m.port, path)
	resp, err := m.client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s, %v", path, resp.Status, err)
	}
	if r := review.Response; r == nil || string(r.UID) != uid || !r.Allowed {
		t.Errorf("POST %s answered %+v; want the request's uid, allowed", path, r)
	}
}

// webhookCert writes a self-signed serving certificate for 127.0.0.1 as
// tls.crt and tls.key, where --webhook-cert-path finds them, and returns
// the folder and a pool that trusts it.
func webhookCert(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "scaffolded-manager"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         true,

		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return dir, pool
}

// freePort returns a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond until it holds, failing the test with what() after
// timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer for a process's output, read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
