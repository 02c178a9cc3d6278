package robustness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/kinds"
)

// KilleeEnv is the environment variable that makes the test binary an
// operator process of a run that kills its operators: its TestMain calls
// RunKillee with the variable's value before anything else.
const KilleeEnv = "GOPF_ROBUSTNESS_KILLEE"

// LogsEnv, if set in the test's environment, names a folder where each
// operator process of a run that kills writes its log, to
// <run>-process-<n>.log (to look into a failure); the log is discarded
// otherwise.
const LogsEnv = "GOPF_ROBUSTNESS_LOGS"

// killeeSpec is what an operator process needs to know, as the run gives
// it in KilleeEnv.
type killeeSpec struct {
	Class     string
	Storage   reconcile.Storage
	Namespace string
	Run       string // the value of RunLabel
	Process   int
	Proxy     string // the fault proxy's URL: the process's API server
	Reports   string // the URL of the run's report server
}

// RunKillee runs an operator process the way it runs in a Pod, for a run
// that kills it: the registry of the run's class of kind, against the
// fault proxy, until SIGTERM (a graceful stop) or SIGKILL. Each handler
// call reports to the run before the handler does anything (the run
// answers how the call behaves, and records the call: its side effect)
// and again once it is done, before the engine writes its outcome. It
// returns the process's exit code.
func RunKillee(spec string) int {
	var s killeeSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", KilleeEnv, err)
		return 2
	}
	if err := runKillee(s); err != nil {
		fmt.Fprintf(os.Stderr, "operator process %d: %v\n", s.Process, err)
		return 1
	}
	return 0
}

func runKillee(s killeeSpec) error {
	class, ok := classNamed(s.Class)
	if !ok {
		return fmt.Errorf("no class of kind %q", s.Class)
	}
	logs, err := processLog(s)
	if err != nil {
		return err
	}
	if logs != nil {
		defer logs.Close() //nolint:errcheck // a log cut short is still read
	}
	term, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	k := &killee{s: s, class: class, http: &http.Client{Timeout: 30 * time.Second}}
	reg := handlers.NewRegistry()
	class.register(reg, k.handle, options{labels: handlers.Labels{RunLabel: s.Run}, watched: class.watchedPath, daemon: k.daemon, timer: k.timer})
	cfg := &rest.Config{Host: s.Proxy, QPS: -1} // no client-side limit, as gopf.Main has it
	opts := envtest.OperatorOptions{Scheme: Scheme(), Reconcile: reconcile.Options{Storage: s.Storage}}
	if !class.Cluster {
		opts.Namespaces = []string{s.Namespace}
	}
	op, err := envtest.RunOperator(context.Background(), cfg, reg, opts)
	if err != nil {
		return err
	}
	if err := k.post("/ready", readyReport{Process: s.Process}, nil); err != nil {
		return errors.Join(err, op.Stop())
	}
	<-term.Done()
	return op.Stop()
}

// processLog sets the process's logger up as LogsEnv says, and returns
// the file it writes to, if any.
func processLog(s killeeSpec) (*os.File, error) {
	dir := os.Getenv(LogsEnv)
	if dir == "" {
		logf.SetLogger(logr.Discard())
		return nil, nil
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-process-%d.log", s.Run, s.Process)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", LogsEnv, err)
	}
	logf.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(f)))
	return f, nil
}

// Scheme is the scheme of the suite's kinds: built-in ones, KopfExample and
// those of package test/kinds.
func Scheme() *runtime.Scheme { return envtest.NewScheme(kopfv1.AddToScheme, kinds.AddToScheme) }

// classNamed returns the class of kind called name.
func classNamed(name string) (Class, bool) {
	for _, c := range Classes {
		if c.Name == name {
			return c, true
		}
	}
	return Class{}, false
}

// killee is the handler side of an operator process.
type killee struct {
	s     killeeSpec
	class Class
	http  *http.Client
}

// handle is every handler of the process: it reports the call, behaves as
// the run answers, and reports how the call ended.
func (k *killee) handle(ctx context.Context, handler string, obj map[string]any, c *handlers.Cause) (any, error) {
	v := k.class.versions(obj)
	var rep callReply
	if err := k.post("/call", newCall(k.s.Process, handler, v, c), &rep); err != nil {
		return nil, handlers.Temporary(err, retryDelay)
	}
	outcome, patched, err := behave(ctx, rep, c)
	if rerr := k.post("/end", endReport{ID: rep.ID, Outcome: outcome, Patched: patched}, nil); rerr != nil {
		return nil, handlers.Temporary(rerr, retryDelay)
	}
	if interrupted(ctx, outcome, err) {
		if rerr := k.post("/end", endReport{ID: rep.ID, Outcome: Interrupted}, nil); rerr != nil {
			return nil, handlers.Temporary(rerr, retryDelay)
		}
		err = ctx.Err()
	}
	return map[string]any{"saw": v.String()}, err
}

// daemon is the daemon of the process: it reports its start, its
// iterations and its stop (see runDaemon).
func (k *killee) daemon(c *handlers.Cause, life daemonLife) error {
	return runDaemon(c, life, k.s.Process, func(d daemonReport) (daemonReply, error) {
		var rep daemonReply
		err := k.post("/daemon", d, &rep)
		return rep, err
	})
}

// timer is the timer of the process: each run reports its start and its
// end (see runTimer).
func (k *killee) timer(c *handlers.Cause) error {
	return runTimer(c, k.s.Process, func(d timerReport) (timerReply, error) {
		var rep timerReply
		err := k.post("/timer", d, &rep)
		return rep, err
	})
}

// post sends body as JSON to the run's report server and decodes its
// answer into out, if given.
func (k *killee) post(path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := k.http.Post(k.s.Reports+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("reporting %s: %w", path, err)
	}
	defer resp.Body.Close() //nolint:errcheck // read to the end below
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reporting %s: %s", path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// callReport is a handler call as it begins: the run records it (the
// call's side effect) and answers with a callReply.
type callReport struct {
	Process  int
	Handler  string
	Object   string
	UID      string
	Reason   string
	Diff     string
	Versions Versions
}

// newCall is the report of a call of handler by process that saw v.
func newCall(process int, handler string, v Versions, c *handlers.Cause) callReport {
	return callReport{Process: process, Handler: handler, Object: c.Name, UID: string(c.UID),
		Reason: string(c.Reason), Diff: fmt.Sprint(c.Diff), Versions: v}
}

// callReply says which call it is and how it behaves; Label is the value
// a handler armed with BehavePatch sets.
type callReply struct {
	ID        int
	Behaviour Behaviour
	Label     string
}

// endReport is how call ID ended, reported before the engine writes its
// outcome.
type endReport struct {
	ID      int
	Outcome Outcome
	Patched bool
}

// readyReport says that an operator process has its caches in sync.
type readyReport struct{ Process int }

// interrupted reports whether a call that ended with outcome and err,
// already reported, counts as interrupted after all: it failed, and the
// operator began to stop meanwhile. The engine takes a handler's error
// returned once the operator stops for a call cut short by the stop, not
// an attempt, and calls the handler again in the next process; so must
// the history. Checked as the last thing before the handler returns.
func interrupted(ctx context.Context, outcome Outcome, err error) bool {
	return err != nil && outcome != Interrupted && ctx.Err() != nil
}

// behave carries out a call as rep says, and returns how it ended, whether
// it patched its object, and the handler's error.
func behave(ctx context.Context, rep callReply, c *handlers.Cause) (Outcome, bool, error) {
	outcome, patched := Succeeded, false
	var err error
	switch rep.Behaviour {
	case BehaveTemporary:
		err, outcome = handlers.Temporary(errors.New("armed to fail for now"), retryDelay), Retrying
	case BehavePermanent:
		err, outcome = handlers.Permanent(errors.New("armed to fail for good")), FailedForGood
	case BehavePatch:
		label := rep.Label
		c.Patch.SetLabel(PatchedLabel, &label)
		patched = true
	case BehaveBlock:
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		return Interrupted, false, ctx.Err()
	}
	return outcome, patched, err
}
