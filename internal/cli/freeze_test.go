package cli_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/internal/cli"
)

func TestFreezeWritesItsEntryAndMessageToTheNamespacesGivenAndResumeRemovesIt(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	one, two := envtest.New(t, scheme).Namespace, envtest.New(t, scheme).Namespace
	for _, ns := range []string{one, two} {
		if err := c.Create(ctx, &kopfv1.KopfPeering{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ops"}}); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(ns string) (kopfv1.PeerStatus, bool) {
		var p kopfv1.KopfPeering
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ops"}, &p); err != nil {
			t.Fatal(err)
		}
		e, ok := p.Status["me"]
		return e, ok
	}

	if err := cli.FreezeCommand(ctx, c, "freeze", "-P", "ops", "-n", one, "-t", "600", "-m", "upgrading", "-i", "me"); err != nil {
		t.Fatal(err)
	}
	if e, ok := entry(one); !ok || e.Priority != 100 || e.Lifetime != 600 || e.Message != "upgrading" {
		t.Errorf("the freeze in %s is %+v (present: %v)", one, e, ok)
	}
	if _, ok := entry(two); ok {
		t.Errorf("the freeze reached %s, which -n did not name", two)
	}

	if err := cli.FreezeCommand(ctx, c, "resume", "-P", "ops", "-n", one, "-i", "me"); err != nil {
		t.Fatal(err)
	}
	if _, ok := entry(one); ok {
		t.Error("resume left the freeze")
	}
}
