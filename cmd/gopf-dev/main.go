//go:build unix

// Command gopf-dev runs an operator for development; it is what `make run`
// runs.
//
// Usage:
//
//	gopf-dev [flags] [-- operator command...]
//
// Without a command after "--", gopf-dev builds the Go package named by
// --operator into bin/dev/ and runs the binary as a child process.
//
// If the kubeconfig (KUBECONFIG, else ~/.kube/config) reaches a cluster, the
// operator runs against that cluster and nothing else happens: no CRDs or
// samples are installed there. Otherwise gopf-dev starts a local kube-apiserver
// and etcd (see package envtest), installs the CRDs, writes a kubeconfig for
// kubectl, runs the operator against it, creates the sample objects and
// prints every change to their status. Ctrl-C stops the operator, then the
// control plane.
//
// gopf-dev runs on Unix systems only: it puts the operator in a process group
// of its own so that one Ctrl-C reaches it exactly once.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gopf-dev/gopf/envtest"
)

const (
	// binDir is where the operator binary is built.
	binDir = "bin/dev"
	// probeTimeout bounds the check whether the kubeconfig's cluster answers.
	probeTimeout = 5 * time.Second
	// stopGrace is how long the operator may take to stop after SIGINT
	// before it is killed.
	stopGrace = 10 * time.Second
	// pollInterval is how often the sample objects' status is read.
	pollInterval = 500 * time.Millisecond
)

// options are the command-line settings.
type options struct {
	operator   string   // Go package to build and run
	crds       string   // CRD folder for the local control plane
	samples    string   // sample folder; "" creates none
	kubeconfig string   // where the local control plane's kubeconfig goes
	verbose    bool     // show the control plane's own output
	command    []string // operator command given after "--", if any
}

// main parses the flags, runs gopf-dev and exits with its status.
func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the flag package has printed the problem and the usage
	}
	// controller-runtime warns after 30 s if nothing has set its logger.
	crlog.SetLogger(logr.Discard())

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	code := run(opts, sigs)
	signal.Stop(sigs)
	os.Exit(code)
}

// parseFlags reads the command line into options.
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("gopf-dev", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.operator, "operator", "./examples/minimal", "the operator's Go `package`, built into "+binDir+"/ (ignored if a command follows --)")
	fs.StringVar(&o.crds, "crds", "config/crd/bases", "`folder` of the CRDs to install in the local control plane")
	fs.StringVar(&o.samples, "samples", "config/samples", "`folder` of objects to create in the local control plane; empty for none")
	fs.StringVar(&o.kubeconfig, "kubeconfig", binDir+"/kubeconfig", "`file` to write the local control plane's kubeconfig to")
	fs.BoolVar(&o.verbose, "verbose", false, "show the local control plane's own output")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gopf-dev [flags] [-- operator command...]\n\n"+
			"Runs the operator against the cluster of KUBECONFIG (or ~/.kube/config) if it\n"+
			"answers, else against a local control plane with the CRDs and samples installed.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.command = fs.Args()
	return o, nil
}

// run picks the cluster, prepares the operator command and runs it; it
// returns the exit status.
func run(opts options, sigs <-chan os.Signal) int {
	server, why := reachableCluster(probeTimeout)
	if server != "" {
		say("using the cluster at %s (from your kubeconfig); no CRDs or samples are installed there", server)
	} else {
		say("no cluster is reachable (%s); a local control plane will be started", why)
	}
	argv, err := operatorCommand(opts)
	if err != nil {
		fail("%v", err)
		return 1
	}
	if server != "" {
		return runAgainstCluster(argv, sigs)
	}
	return runLocal(opts, argv, sigs)
}

// reachableCluster returns the API server URL of the kubeconfig's current
// cluster if it answers GET /version within timeout; otherwise it returns ""
// and the reason.
func reachableCluster(timeout time.Duration) (server, why string) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if !anyExists(rules.Precedence) {
		if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
			return "", "KUBECONFIG is not set and " + clientcmd.RecommendedHomeFile + " does not exist"
		}
		return "", "no file named in KUBECONFIG exists"
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return "", "the kubeconfig cannot be used: " + err.Error()
	}
	cfg.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", "the kubeconfig cannot be used: " + err.Error()
	}
	if _, err := dc.ServerVersion(); err != nil {
		return "", fmt.Sprintf("%s does not answer: %v", cfg.Host, err)
	}
	return cfg.Host, ""
}

// anyExists reports whether at least one of the files exists.
func anyExists(files []string) bool {
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// operatorCommand returns the command that runs the operator: the one given
// after "--", else the binary built from the --operator package.
func operatorCommand(opts options) ([]string, error) {
	if len(opts.command) > 0 {
		return opts.command, nil
	}
	bin, err := buildOperator(opts.operator)
	if err != nil {
		return nil, err
	}
	return []string{bin}, nil
}

// buildOperator builds the Go package pkg into binDir and returns the
// binary's absolute path.
func buildOperator(pkg string) (string, error) {
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return "", err
	}
	out, err := filepath.Abs(filepath.Join(binDir, filepath.Base(abs)))
	if err != nil {
		return "", err
	}
	say("building %s into %s", pkg, out)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the operator %s failed (%v); fix the errors above and run again", pkg, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.IsDir() {
		return "", fmt.Errorf("building %s made no program at %s: is it a main package? Pass one with --operator", pkg, out)
	}
	return out, nil
}

// runAgainstCluster runs the operator with this process's environment,
// forwards SIGINT and SIGTERM to it and returns its exit status.
func runAgainstCluster(argv []string, sigs <-chan os.Signal) int {
	op, err := startOperator(argv, os.Environ())
	if err != nil {
		fail("%v", err)
		return 1
	}
	for {
		select {
		case sig := <-sigs:
			op.signal(sig.(syscall.Signal))
		case err := <-op.done:
			if err != nil {
				fail("the operator exited: %v", err)
			}
			return exitCode(err)
		}
	}
}

// runLocal starts a local control plane, runs the operator against it,
// creates the samples and prints their status changes until a signal
// arrives or the operator exits. It stops everything before it returns the
// exit status.
func runLocal(opts options, argv []string, sigs <-chan os.Signal) (code int) {
	say("starting the local control plane (kube-apiserver and etcd)")
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{opts.crds}, Verbose: opts.verbose})
	if err != nil {
		fail("cannot start the local control plane: %v", err)
		return 1
	}
	defer func() {
		if err := stopControlPlane(cp, opts.kubeconfig); err != nil {
			fail("%v", err)
			code = 1
		}
		if code == 0 {
			say("stopped")
		}
	}()
	if err := cp.WriteKubeconfig(opts.kubeconfig); err != nil {
		fail("writing the kubeconfig: %v", err)
		return 1
	}
	if interrupted(sigs) {
		return 0
	}
	kubeconfig, err := filepath.Abs(opts.kubeconfig)
	if err != nil {
		fail("%v", err)
		return 1
	}
	env := setEnv(os.Environ(), clientcmd.RecommendedConfigPathEnvVar, kubeconfig)
	op, err := startOperator(append(argv[:len(argv):len(argv)], "--health-probe-bind-address=0"), env)
	if err != nil {
		fail("%v", err)
		return 1
	}
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		fail("creating a client: %v", err)
		_ = op.stop(stopGrace, sigs) // the run failed already; how the operator exits adds nothing
		return 1
	}
	objs, err := applySamples(c, opts.samples)
	if err != nil {
		fail("creating the samples: %v; fix them, or pass --samples= to create none, and run again", err)
		_ = op.stop(stopGrace, sigs) // as above
		return 1
	}
	printHints(c, cp, opts.kubeconfig)
	return supervise(op, &statusWatcher{c: c, objs: objs, last: map[string]string{}}, sigs)
}

// supervise prints status changes until a signal arrives, then stops the
// operator, or until the operator exits by itself. It returns the exit status.
func supervise(op *operator, w *statusWatcher, sigs <-chan os.Signal) int {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	w.poll()
	for {
		select {
		case sig := <-sigs:
			say("got %v; stopping the operator", sig)
			if err := op.stop(stopGrace, sigs); exitCode(err) == 1 {
				say("the operator exited with status 1 after the interrupt (`go run` does so even when its program stopped cleanly)")
			} else if err != nil {
				say("the operator exited with %v after the interrupt", err)
			}
			return 0
		case err := <-op.done:
			if err != nil {
				fail("the operator exited by itself: %v; see its output above", err)
				return 1
			}
			say("the operator exited by itself")
			return 0
		case <-ticker.C:
			w.poll()
		}
	}
}

// printHints tells how to look at the local control plane and how to stop.
func printHints(c client.Client, cp *envtest.ControlPlane, kubeconfig string) {
	say("the local control plane is up; its kubeconfig is %s", kubeconfig)
	seen := map[string]bool{}
	for _, gvk := range cp.InstalledCRDs() {
		m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil || seen[m.Resource.Resource] {
			continue
		}
		seen[m.Resource.Resource] = true
		say("try: kubectl --kubeconfig %s get %s", kubeconfig, m.Resource.Resource)
	}
	say("Press Ctrl-C to stop.")
}

// stopControlPlane stops the control plane and removes its kubeconfig.
func stopControlPlane(cp *envtest.ControlPlane, kubeconfig string) error {
	say("stopping the local control plane")
	var errs []error
	if err := cp.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping the control plane: %w (check for leftover kube-apiserver and etcd processes)", err))
	}
	if err := os.Remove(kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// operator is the operator's running child process.
type operator struct {
	cmd  *exec.Cmd
	done chan error // receives the result of Wait once the process has exited
}

// startOperator starts argv with env in a process group of its own, so that
// a Ctrl-C at the terminal reaches only gopf-dev, which forwards it once:
// controller-runtime exits at once with status 1 on a second signal.
func startOperator(argv, env []string) (*operator, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	say("starting the operator: %s", strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the operator %q: %w", argv[0], err)
	}
	op := &operator{cmd: cmd, done: make(chan error, 1)}
	go func() { op.done <- cmd.Wait() }()
	return op, nil
}

// signal sends sig to the operator's process group (which includes the
// program `go run` starts, if the command is `go run`).
func (op *operator) signal(sig syscall.Signal) {
	_ = syscall.Kill(-op.cmd.Process.Pid, sig) // fails only if it is gone
}

// stop sends SIGINT to the operator and waits for it to exit; after grace,
// or on another signal from sigs, it kills the process group. It returns
// the operator's exit error.
func (op *operator) stop(grace time.Duration, sigs <-chan os.Signal) error {
	op.signal(syscall.SIGINT)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-op.done:
		return err
	case <-timer.C:
		say("the operator did not stop within %s; killing it", grace)
	case <-sigs:
		say("killing the operator")
	}
	op.signal(syscall.SIGKILL)
	return <-op.done
}

// exitCode turns a child's Wait error into an exit status, 128+n for a
// child killed by signal n, as shells do.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// interrupted reports whether a signal is waiting in sigs, without blocking.
func interrupted(sigs <-chan os.Signal) bool {
	select {
	case sig := <-sigs:
		say("got %v during start-up; stopping", sig)
		return true
	default:
		return false
	}
}

// setEnv returns env with key set to value, replacing any earlier setting.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// say prints one line of gopf-dev's own progress to stdout.
func say(format string, args ...any) {
	fmt.Printf("gopf-dev: "+format+"\n", args...)
}

// fail prints one line about a problem to stderr.
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gopf-dev: error: "+format+"\n", args...)
}
