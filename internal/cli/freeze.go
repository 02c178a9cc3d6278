package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/reconcile"
)

// runFreeze implements the freeze and resume commands.
func runFreeze(name, command string, args []string) error {
	fc, err := parseFreeze(name, command, args)
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	return fc.do(ctrl.SetupSignalHandler(), c)
}

// freezeCommand is a parsed freeze or resume command: which peering
// objects it writes to (Kopf's -n/-A: the KopfPeering in each matching
// namespace, else the ClusterKopfPeering) and what.
type freezeCommand struct {
	resume     bool
	peering    string
	namespaces []string
	freeze     peering.FreezeOptions
}

// parseFreeze reads the flags of freeze and resume, which are Kopf's.
func parseFreeze(name, command string, args []string) (*freezeCommand, error) {
	fs := flag.NewFlagSet(name+" "+command, flag.ContinueOnError)
	fc := &freezeCommand{resume: command == "resume"}
	var namespaces multiFlag
	var all, dev bool
	lifetime := secondsFlag(-1)
	fs.StringVar(&fc.peering, "peering", "", "The peering to "+command+" (required).")
	fs.StringVar(&fc.peering, "P", "", "Short for --peering.")
	fs.Var(&namespaces, "namespace", "Write to the KopfPeering in each namespace matching these patterns (as the operator's --namespace); repeatable. Default: the ClusterKopfPeering.")
	fs.Var(&namespaces, "n", "Short for --namespace.")
	fs.BoolVar(&all, "all-namespaces", false, "Write to the ClusterKopfPeering (the default).")
	fs.BoolVar(&all, "A", false, "Short for --all-namespaces.")
	fs.StringVar(&fc.freeze.Identity, "id", "freeze@"+hostname(), "The identity the freeze is written under; resume removes the entry of this identity.")
	fs.StringVar(&fc.freeze.Identity, "i", "freeze@"+hostname(), "Short for --id.")
	if !fc.resume {
		fs.Var(&lifetime, "lifetime", "How long the operators stay paused: seconds, as Kopf takes it, or a duration such as 10m (required).")
		fs.Var(&lifetime, "t", "Short for --lifetime.")
		fs.IntVar(&fc.freeze.Priority, "priority", 100, "The priority of the freeze; operators below it pause.")
		fs.IntVar(&fc.freeze.Priority, "p", 100, "Short for --priority.")
		fs.BoolVar(&dev, "dev", false, fmt.Sprintf("Freeze with priority %d, as a development run has.", reconcile.DevPriority))
		fs.StringVar(&fc.freeze.Message, "message", "", "Why: written into the peering entry and shown in the paused operators' logs.")
		fs.StringVar(&fc.freeze.Message, "m", "", "Short for --message.")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%s: unexpected arguments %q", command, fs.Args())
	case fc.peering == "":
		return nil, errors.New(command + " needs --peering")
	case all && len(namespaces) > 0:
		return nil, errors.New("give --namespace or --all-namespaces, not both")
	case !fc.resume && lifetime < 0:
		return nil, errors.New("freeze needs --lifetime")
	}
	if _, err := scope.CacheNamespaces(namespaces); err != nil {
		return nil, err
	}
	fc.namespaces = namespaces
	fc.freeze.Lifetime = time.Duration(lifetime)
	if dev {
		fc.freeze.Priority = reconcile.DevPriority
	}
	return fc, nil
}

// do writes the freeze, or removes it.
func (fc *freezeCommand) do(ctx context.Context, c client.Client) error {
	if fc.resume {
		return peering.Unfreeze(ctx, c, fc.peering, fc.namespaces, fc.freeze.Identity)
	}
	return peering.Freeze(ctx, c, fc.peering, fc.namespaces, fc.freeze)
}

// secondsFlag is a duration given as Kopf's whole seconds ("600") or as a
// Go duration ("10m").
type secondsFlag time.Duration

func (s *secondsFlag) String() string { return time.Duration(*s).String() }

func (s *secondsFlag) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		*s = secondsFlag(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("not seconds nor a duration: %q", v)
	}
	*s = secondsFlag(d)
	return nil
}

// hostname is the machine's name, or "" when the system does not say.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
