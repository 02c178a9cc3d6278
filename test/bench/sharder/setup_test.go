//go:build linux

package sharder

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// sharderPort is where the sharder's webhook server listens: controller-
// runtime's default, which the sharder's configuration cannot change.
const sharderPort = 9443

// controllerRingGVK is the reference's ControllerRing, read and written
// unstructured: the test does not build against the sharder's module.
var controllerRingGVK = schema.GroupVersionKind{Group: "sharding.timebertt.dev", Version: "v1alpha1", Kind: "ControllerRing"}

// crdOfSharder is the ControllerRing CRD's file in the sharder's source.
const crdOfSharder = "config/crds/sharding.timebertt.dev_controllerrings.yaml"

// sharderConfig is the sharder's configuration: no probes and no metrics
// (their ports could be taken), no leader election (one sharder), its
// webhook served by URL with the test's certificate.
const sharderConfig = `apiVersion: config.sharding.timebertt.dev/v1alpha1
kind: SharderConfig
health:
  bindAddress: "0"
metrics:
  bindAddress: "0"
leaderElection:
  leaderElect: false
webhook:
  server:
    certDir: %q
  config:
    clientConfig:
      url: https://127.0.0.1:%d
      caBundle: %s
`

// servingCerts makes a CA and a serving certificate for 127.0.0.1 in a
// folder of its own, with controller-runtime's envtest; the function it
// returns removes the folder.
func servingCerts() (dir string, ca []byte, cleanup func() error, err error) {
	o := &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := o.PrepWithoutInstalling(); err != nil {
		return "", nil, nil, fmt.Errorf("making the sharder's serving certificate: %w", err)
	}
	return o.LocalServingCertDir, o.LocalServingCAData, o.Cleanup, nil
}

// portFree fails unless the sharder's webhook port is free.
func portFree() error {
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", sharderPort))
	if err != nil {
		return fmt.Errorf("port %d, where the sharder's webhook server listens (it has no setting for the port), is taken: %w", sharderPort, err)
	}
	return l.Close()
}

// sharder is the running sharder process.
type sharder struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// startSharder writes the sharder's configuration into work and starts
// bin as the user of kubeconfig, its output going to work/sharder.log.
func startSharder(bin, work, kubeconfig, certDir string, ca []byte) (*sharder, error) {
	cfg := filepath.Join(work, "sharder-config.yaml")
	content := fmt.Sprintf(sharderConfig, certDir, sharderPort, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		return nil, err
	}
	s := &sharder{log: filepath.Join(work, "sharder.log"), exited: make(chan struct{})}
	out, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "--config", cfg)
	s.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := s.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting the sharder %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		out.Close()
		close(s.exited)
	}()
	return s, nil
}

// stop stops the sharder with SIGTERM, killing it after 30 s.
func (s *sharder) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("the sharder did not stop within 30 s of SIGTERM and was killed")
	}
}

// alive fails, with the end of its log, if the sharder has exited.
func (s *sharder) alive() error {
	select {
	case <-s.exited:
		tail, _ := os.ReadFile(s.log)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("the sharder exited (%v); its output ends with:\n%s", s.cmd.ProcessState, tail)
	default:
		return nil
	}
}

// The sharder's log messages around a resync of a ring's assignments,
// which drains or moves every object that is not on its shard.
const (
	resyncStarted  = "Starting resync of object assignments"
	resyncFinished = "Finished resync of object assignments"
)

// logLine is what the test reads of a line of the sharder's log (JSON,
// times in ISO 8601 to the millisecond).
type logLine struct {
	Msg        string `json:"msg"`
	TS         string `json:"ts"`
	Controller string `json:"controller"`
	Error      string `json:"error"`
}

// lines returns the lines of the sharder's log so far.
func (s *sharder) lines() ([]logLine, error) {
	data, err := os.ReadFile(s.log)
	if err != nil {
		return nil, err
	}
	var out []logLine
	for _, raw := range bytes.Split(data, []byte("\n")) {
		var l logLine
		if json.Unmarshal(raw, &l) == nil {
			out = append(out, l)
		}
	}
	return out, nil
}

// resynced reports whether the sharder's log shows a resync of the
// object assignments that started at since or later and has finished:
// the sharder has then tried every drain and move that the shards at its
// start called for.
func (s *sharder) resynced(since time.Time) (bool, error) {
	lines, err := s.lines()
	if err != nil {
		return false, err
	}
	since = since.Truncate(time.Millisecond)
	started := false
	for _, l := range lines {
		ts, err := time.Parse("2006-01-02T15:04:05.000Z0700", l.TS)
		switch {
		case strings.HasPrefix(l.Msg, resyncStarted) && err == nil && !ts.Before(since):
			started = true
		case strings.HasPrefix(l.Msg, resyncFinished) && started:
			return true, nil
		}
	}
	return false, nil
}

// resyncs counts the sharder's resyncs, those that ended in errors, and
// the drains and moves among those errors that conflicted with another
// write of the object: the sharder patches with the resourceVersion of
// its list and retries the whole resync after a back-off.
func (s *sharder) resyncs() (started, failed, conflicts int, err error) {
	lines, err := s.lines()
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l.Msg, resyncStarted):
			started++
		case l.Msg == "Reconciler error" && l.Controller == "sharder":
			failed++
			conflicts += strings.Count(l.Error, "the object has been modified")
		}
	}
	return started, failed, conflicts, err
}

// createRing creates the ControllerRing named ring for kopfexamples and
// waits until the sharder says it is ready and has registered its webhook.
func createRing(ctx context.Context, c client.Client, s *sharder, ring string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(controllerRingGVK)
	obj.SetName(ring)
	obj.Object["spec"] = map[string]any{"resources": []any{map[string]any{"group": "kopf.dev", "resource": "kopfexamples"}}}
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating the ControllerRing %s: %w", ring, err)
	}
	return poll(ctx, time.Minute, "the ControllerRing "+ring+" ready, with its webhook", func() (bool, error) {
		if err := s.alive(); err != nil {
			return false, err
		}
		if err := c.Get(ctx, types.NamespacedName{Name: ring}, obj); err != nil {
			return false, err
		}
		if !ringReady(obj) {
			return false, nil
		}
		var hook admissionregistrationv1.MutatingWebhookConfiguration
		err := c.Get(ctx, types.NamespacedName{Name: "controllerring-" + ring}, &hook)
		return err == nil, client.IgnoreNotFound(err)
	})
}

// ringReady reports whether the ControllerRing's Ready condition is true.
func ringReady(ring *unstructured.Unstructured) bool {
	raw, _, _ := unstructured.NestedSlice(ring.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		t, _ := m["type"].(string)
		st, _ := m["status"].(string)
		conds = append(conds, metav1.Condition{Type: t, Status: metav1.ConditionStatus(st)})
	}
	return meta.IsStatusConditionTrue(conds, "Ready")
}

// poll calls cond every 100 ms until it is true or fails, or timeout
// passes; what names the wait in the error.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}
