package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestABadNamespacePatternIsReportedBeforeTheClusterIsLookedFor(t *testing.T) {
	fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	if err := fs.Parse([]string{"--namespace", "app-["}); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err == nil {
		t.Error("check accepted the namespace pattern app-[")
	}
}

func TestAMetricsCertificateForPlainHTTPIsRefused(t *testing.T) {
	fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	if err := fs.Parse([]string{"--metrics-secure=false", "--metrics-cert-dir", "/certs"}); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err == nil {
		t.Error("check accepted a certificate directory for plain HTTP")
	}
}

func TestNegativeTimeoutsAreRefused(t *testing.T) {
	for _, flag := range []string{"--watch-inactivity-timeout=-1s", "--watch-server-timeout=-1s", "--reconciliation-timeout=-1s"} {
		fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
		if err := fs.Parse([]string{flag}); err != nil {
			t.Fatal(err)
		}
		if err := f.check(); err == nil {
			t.Errorf("check accepted %s", flag)
		}
	}
}

func TestTheKopfPrefixFlagNamesTheKopfOperatorTakenOverFrom(t *testing.T) {
	for _, c := range []struct {
		args []string
		code string
		want string
	}{
		{nil, "", ""}, // the engine's default applies
		{nil, "kopf.example.com", "kopf.example.com"},
		{[]string{"--kopf-prefix", "ops.example.com"}, "kopf.example.com", "ops.example.com"},
	} {
		fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := f.EngineOptions(reconcile.Options{KopfPrefix: c.code}).KopfPrefix; got != c.want {
			t.Errorf("%q with %q in code: KopfPrefix = %q, want %q", c.args, c.code, got, c.want)
		}
	}
}

func TestWithoutPeeringFlagsTheDefaultPeeringIsUsedIfItExists(t *testing.T) {
	for _, c := range []struct {
		args []string
		want *reconcile.PeeringOptions // Lifetime left out
	}{
		{nil, &reconcile.PeeringOptions{Name: "default", Optional: true}},
		{[]string{"--standalone"}, nil},
		{[]string{"--standalone", "--peering", "ops"}, nil},
		{[]string{"-P", "ops", "-p", "7"}, &reconcile.PeeringOptions{Name: "ops", Priority: 7}},
		{[]string{"--dev"}, &reconcile.PeeringOptions{Name: "default", Optional: true, Priority: reconcile.DevPriority}},
		{[]string{"-n", "team-a", "-n", "team-b", "--peering", "ops"}, &reconcile.PeeringOptions{Name: "ops", PerNamespace: true}},
		{[]string{"-n", "team-a", "--peering-namespace", "ops-ns"}, &reconcile.PeeringOptions{Name: "default", Optional: true, Namespace: "ops-ns"}},
		{[]string{"-A", "--peering", "ops", "--peering-stealth"}, &reconcile.PeeringOptions{Name: "ops", Stealth: true}},
	} {
		fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		got := f.EngineOptions(reconcile.Options{}).Peering
		if got != nil {
			got.Lifetime = 0
		}
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%q: peering %+v, want %+v", c.args, got, c.want)
		}
	}
}

func TestAPeeringSetInCodeTakesThePeeringFlagsGiven(t *testing.T) {
	inCode := reconcile.Options{Peering: &reconcile.PeeringOptions{Name: "from-code"}}
	fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got := f.EngineOptions(inCode).Peering; got == nil || got.Name != "from-code" {
		t.Errorf("peering = %+v, want the one set in code", got)
	}
	fs, f = NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	if err := fs.Parse([]string{"-p", "7", "--peering-lifetime", "2m", "--peering-stealth", "--peering-namespace", "ops"}); err != nil {
		t.Fatal(err)
	}
	want := reconcile.PeeringOptions{Name: "from-code", Namespace: "ops", Priority: 7, Lifetime: 2 * time.Minute, Stealth: true}
	if got := f.EngineOptions(inCode).Peering; got == nil || *got != want {
		t.Errorf("peering = %+v, want the one set in code with the flags given over it, %+v", got, want)
	}
	if inCode.Peering.Priority != 0 {
		t.Errorf("the options set in code were changed: %+v", inCode.Peering)
	}
	fs, f = NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	if err := fs.Parse([]string{"--dev"}); err != nil {
		t.Fatal(err)
	}
	if got := f.EngineOptions(inCode).Peering; got == nil || got.Priority != reconcile.DevPriority || got.Lifetime != 0 {
		t.Errorf("peering = %+v, want the one set in code with the development priority", got)
	}
	fs, f = NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	if err := fs.Parse([]string{"--standalone"}); err != nil {
		t.Fatal(err)
	}
	if got := f.EngineOptions(inCode).Peering; got != nil {
		t.Errorf("--standalone kept peering %+v", got)
	}
}

func TestFreezeAndResumeReadKopfsFlags(t *testing.T) {
	fc, err := parseFreeze("op", "freeze", []string{"-P", "ops", "-n", "team-*", "-n", "infra", "-t", "600", "-m", "upgrading", "-i", "me", "-p", "50"})
	if err != nil {
		t.Fatal(err)
	}
	want := peering.FreezeOptions{Identity: "me", Priority: 50, Lifetime: 10 * time.Minute, Message: "upgrading"}
	if fc.resume || fc.peering != "ops" || len(fc.namespaces) != 2 || fc.freeze != want {
		t.Errorf("freeze = %+v", fc)
	}
	fc, err = parseFreeze("op", "freeze", []string{"--peering", "ops", "--lifetime", "90s", "--dev", "-A"})
	if err != nil {
		t.Fatal(err)
	}
	if fc.freeze.Lifetime != 90*time.Second || fc.freeze.Priority != reconcile.DevPriority || fc.namespaces != nil {
		t.Errorf("freeze = %+v", fc)
	}
	fc, err = parseFreeze("op", "resume", []string{"--peering", "ops", "-n", "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if !fc.resume || len(fc.namespaces) != 1 {
		t.Errorf("resume = %+v", fc)
	}
	for _, c := range []struct {
		command string
		args    []string
	}{
		{"freeze", []string{"--lifetime", "60"}},                      // no peering
		{"freeze", []string{"--peering", "ops"}},                      // no lifetime
		{"freeze", []string{"--peering", "ops", "--lifetime", "ten"}}, // not a lifetime
		{"freeze", []string{"--peering", "ops", "--lifetime", "60", "-n", "a", "-A"}},
		{"freeze", []string{"--peering", "ops", "--lifetime", "60", "-n", "app-["}},
		{"resume", []string{"--peering", "ops", "--message", "m"}}, // resume has no message
		{"resume", []string{"--peering", "ops", "extra"}},
	} {
		if _, err := parseFreeze("op", c.command, c.args); err == nil {
			t.Errorf("%s %q was accepted", c.command, c.args)
		}
	}
}

func TestPrintRBACWritesAClusterRoleOrKubebuilderMarkers(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) { return nil, nil }, handlers.ID("create"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--print-rbac"}, "kind: ClusterRole"},
		{[]string{"--print-rbac=yaml"}, "kind: ClusterRole"},
		{[]string{"--print-rbac=markers"}, "// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=get;list;patch;watch\n"},
	} {
		fs, f := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := f.rbac.Run(&out, reg, clientgoscheme.Scheme); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%q printed\n%s\nwant %q in it", c.args, out.String(), c.want)
		}
	}
	fs, _ := NewFlags("op", WatchDefaults{Inactivity: 2 * time.Minute})
	fs.SetOutput(io.Discard)
	if err := fs.Parse([]string{"--print-rbac=json"}); err == nil {
		t.Error("--print-rbac=json was accepted")
	}
}
