package gopf

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestMainsFlagsBecomeTheManagerOptions(t *testing.T) {
	fs, f := newFlags("op")
	err := fs.Parse([]string{
		"--namespace", "app-*,!app-pr-*", "--kube-api-qps", "20", "--kube-api-burst", "30",
		"--metrics-bind-address", ":8443", "--health-probe-bind-address", ":8081",
		"--leader-elect", "--graceful-shutdown-timeout", "5s", "--webhook-configuration-name", "op.example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	mo := f.managerOptions(scheme, reconcile.Options{Prefix: "example.com"})
	if mo.Scheme != scheme || mo.QPS != 20 || mo.Burst != 30 || mo.MetricsBindAddress != ":8443" || mo.HealthProbeBindAddress != ":8081" ||
		!mo.LeaderElection || mo.LeaderElectionID != "op.gopf.dev" || mo.GracefulShutdownTimeout == nil || *mo.GracefulShutdownTimeout != 5*time.Second ||
		mo.Webhook.Name != "op.example.com" || mo.SkipNameValidation {
		t.Errorf("manager options = %+v", mo)
	}
	if got := mo.Engine.Namespaces; len(got) != 1 || got[0] != "app-*,!app-pr-*" {
		t.Errorf("the engine's namespaces are %q: the cache and the engine's scope both follow them", got)
	}
	if mo.Engine.Prefix != "example.com" {
		t.Errorf("the engine options given in code were lost: %+v", mo.Engine)
	}
}

func TestABadNamespacePatternIsReportedBeforeTheClusterIsLookedFor(t *testing.T) {
	fs, f := newFlags("op")
	if err := fs.Parse([]string{"--namespace", "app-["}); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err == nil {
		t.Error("check accepted the namespace pattern app-[")
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
		fs, f := newFlags("op")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := f.engineOptions(reconcile.Options{KopfPrefix: c.code}).KopfPrefix; got != c.want {
			t.Errorf("%q with %q in code: KopfPrefix = %q, want %q", c.args, c.code, got, c.want)
		}
	}
}

func TestMetricsAreServedOverHTTPSWithAuthorizationUnlessMetricsSecureIsFalse(t *testing.T) {
	for name, tc := range map[string]struct {
		args   []string
		secure bool
	}{
		"default":                {secure: true},
		"--metrics-secure=false": {args: []string{"--metrics-secure=false"}, secure: false},
	} {
		t.Run(name, func(t *testing.T) {
			fs, f := newFlags("op")
			if err := fs.Parse(append([]string{"--metrics-bind-address", ":8443"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if err := f.check(); err != nil {
				t.Fatal(err)
			}
			mo, err := metricsOptions(f.managerOptions(runtime.NewScheme(), reconcile.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if mo.BindAddress != ":8443" || mo.SecureServing != tc.secure || (mo.FilterProvider != nil) != tc.secure {
				t.Errorf("metrics server options = %+v, want HTTPS and the authorization filter: %v", mo, tc.secure)
			}
		})
	}
}

func TestAMetricsCertificateForPlainHTTPIsRefused(t *testing.T) {
	fs, f := newFlags("op")
	if err := fs.Parse([]string{"--metrics-secure=false", "--metrics-cert-dir", "/certs"}); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err == nil {
		t.Error("check accepted a certificate directory for plain HTTP")
	}
	if _, err := metricsOptions(ManagerOptions{MetricsInsecure: true, MetricsCertDir: "/certs"}); err == nil {
		t.Error("NewManager would accept a certificate directory for plain HTTP")
	}
}

func TestWatchInactivityTimeoutFlagBecomesTheManagerOption(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, DefaultWatchInactivityTimeout},
		{[]string{"--watch-inactivity-timeout=30s"}, 30 * time.Second},
		{[]string{"--watch-inactivity-timeout=0"}, -1}, // no bound
	} {
		fs, f := newFlags("op")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := f.check(); err != nil {
			t.Fatal(err)
		}
		if got := f.managerOptions(runtime.NewScheme(), reconcile.Options{}).WatchInactivityTimeout; got != tc.want {
			t.Errorf("%v: WatchInactivityTimeout = %s, want %s", tc.args, got, tc.want)
		}
	}
	fs, f := newFlags("op")
	if err := fs.Parse([]string{"--watch-inactivity-timeout=-1s"}); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err == nil {
		t.Error("check accepted a negative watch inactivity timeout")
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
		fs, f := newFlags("op")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		got := f.engineOptions(reconcile.Options{}).Peering
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
	fs, f := newFlags("op")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got := f.engineOptions(inCode).Peering; got == nil || got.Name != "from-code" {
		t.Errorf("peering = %+v, want the one set in code", got)
	}
	fs, f = newFlags("op")
	if err := fs.Parse([]string{"-p", "7", "--peering-lifetime", "2m", "--peering-stealth", "--peering-namespace", "ops"}); err != nil {
		t.Fatal(err)
	}
	want := reconcile.PeeringOptions{Name: "from-code", Namespace: "ops", Priority: 7, Lifetime: 2 * time.Minute, Stealth: true}
	if got := f.engineOptions(inCode).Peering; got == nil || *got != want {
		t.Errorf("peering = %+v, want the one set in code with the flags given over it, %+v", got, want)
	}
	if inCode.Peering.Priority != 0 {
		t.Errorf("the options set in code were changed: %+v", inCode.Peering)
	}
	fs, f = newFlags("op")
	if err := fs.Parse([]string{"--dev"}); err != nil {
		t.Fatal(err)
	}
	if got := f.engineOptions(inCode).Peering; got == nil || got.Priority != reconcile.DevPriority || got.Lifetime != 0 {
		t.Errorf("peering = %+v, want the one set in code with the development priority", got)
	}
	fs, f = newFlags("op")
	if err := fs.Parse([]string{"--standalone"}); err != nil {
		t.Fatal(err)
	}
	if got := f.engineOptions(inCode).Peering; got != nil {
		t.Errorf("--standalone kept peering %+v", got)
	}
}

func TestFreezeAndResumeReadKopfsFlags(t *testing.T) {
	fc, err := parseFreeze("op", "freeze", []string{"-P", "ops", "-n", "team-*", "-n", "infra", "-t", "600", "-m", "upgrading", "-i", "me", "-p", "50"})
	if err != nil {
		t.Fatal(err)
	}
	want := reconcile.FreezeOptions{Identity: "me", Priority: 50, Lifetime: 10 * time.Minute, Message: "upgrading"}
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
		fs, f := newFlags("op")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := rbac(&out, reg, clientgoscheme.Scheme, f); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%q printed\n%s\nwant %q in it", c.args, out.String(), c.want)
		}
	}
	fs, _ := newFlags("op")
	fs.SetOutput(io.Discard)
	if err := fs.Parse([]string{"--print-rbac=json"}); err == nil {
		t.Error("--print-rbac=json was accepted")
	}
}
