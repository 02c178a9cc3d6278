package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/reconcile"
)

// outsideAPod makes the test run as a process outside a Pod: no
// $POD_NAMESPACE, no cluster in KUBECONFIG.
func outsideAPod(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(serviceAccountNamespace); err == nil {
		t.Skip("running in a Pod, whose namespace is the default")
	}
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
}

func TestAShardedOperatorWithoutANamespaceForItsLeasesStopsAtStartNamingTheFlag(t *testing.T) {
	outsideAPod(t)
	for _, c := range []struct {
		args []string
		code *reconcile.Sharding
	}{
		{[]string{"--shard-ring=ring"}, nil},
		{nil, &reconcile.Sharding{Ring: "ring"}},
	} {
		p := Program{
			Name: "op", Registry: handlers.NewRegistry(), Engine: reconcile.Options{Sharding: c.code},
			NewManager: func(*rest.Config, *runtime.Scheme, *Flags) (manager.Manager, error) {
				return nil, errors.New("the operator went on to build its manager")
			},
		}
		err := Run(p, c.args)
		if err == nil || !strings.Contains(err.Error(), "--shard-namespace") || !strings.Contains(err.Error(), "$POD_NAMESPACE") {
			t.Errorf("%q with sharding %+v in code: %v, want an error naming --shard-namespace and $POD_NAMESPACE", c.args, c.code, err)
		}
	}
}

func TestTheShardFlagsGoOverTheShardingInCodeAndTheNamespaceDefaultsToThePods(t *testing.T) {
	outsideAPod(t)
	code := &reconcile.Sharding{Ring: "ring", Shard: "a", Namespace: "ops", LeaseDuration: 20 * time.Second}
	for _, c := range []struct {
		args         []string
		code         *reconcile.Sharding
		podNamespace string
		want         *reconcile.Sharding
	}{
		{nil, nil, "", nil},
		{[]string{"--shard-ring=r", "--shard-namespace=ns"}, nil, "", &reconcile.Sharding{Ring: "r", Namespace: "ns"}},
		{[]string{"--shard-ring=r"}, nil, "pods", &reconcile.Sharding{Ring: "r", Namespace: "pods"}},
		{nil, code, "pods", code},
		{[]string{"--shard-name=b", "--shard-external-assigner"}, code, "",
			&reconcile.Sharding{Ring: "ring", Shard: "b", Namespace: "ops", LeaseDuration: 20 * time.Second, ExternalAssigner: true}},
		{nil, &reconcile.Sharding{Ring: "ring"}, "pods", &reconcile.Sharding{Ring: "ring", Namespace: "pods"}},
	} {
		t.Setenv("POD_NAMESPACE", c.podNamespace)
		fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := f.checkSharding(c.code); err != nil {
			t.Errorf("%q with %+v in code: %v", c.args, c.code, err)
		}
		got := f.EngineOptions(reconcile.Options{Sharding: c.code}).Sharding
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q with %+v in code, $POD_NAMESPACE %q: Sharding = %+v, want %+v", c.args, c.code, c.podNamespace, got, c.want)
		}
	}
	if code.Shard != "a" || code.ExternalAssigner {
		t.Errorf("the flags changed the sharding set in code: %+v", code)
	}
}

func TestAShardNamespaceThatDoesNotExistIsNamedByTheFlagItCameFrom(t *testing.T) {
	missing := fmt.Errorf("gopf: Sharding.Namespace: %w", &shard.NamespaceNotFoundError{Namespace: "nope"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard-namespace=nope"}, `--shard-namespace: the namespace "nope" of the ring's Leases does not exist`},
		{nil, `the namespace "nope" of the ring's Leases does not exist; it is the default of --shard-namespace`},
	} {
		fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
		if err := fs.Parse(append([]string{"--shard-ring=ring"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		err := f.explain(missing)
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want it to start with %q", c.args, err, c.want)
		}
		var nf *shard.NamespaceNotFoundError
		if !errors.As(err, &nf) {
			t.Errorf("%q: the explained error %v is no longer a NamespaceNotFoundError", c.args, err)
		}
	}
	other := errors.New("something else")
	if _, f := NewFlags("op", WatchDefaults{Inactivity: time.Minute}); f.explain(other) != other {
		t.Error("explain changed an error that is not about a flag")
	}
}
