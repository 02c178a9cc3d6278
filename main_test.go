package gopf

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/cli"
	"github.com/gopf-dev/gopf/internal/transport"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestMainsFlagsBecomeTheManagerOptions(t *testing.T) {
	fs, f := cli.NewFlags("op", cli.WatchDefaults{Inactivity: transport.DefaultWatchInactivityTimeout})
	err := fs.Parse([]string{
		"--namespace", "app-*,!app-pr-*", "--kube-api-qps", "20", "--kube-api-burst", "30",
		"--metrics-bind-address", ":8443", "--health-probe-bind-address", ":8081",
		"--leader-elect", "--graceful-shutdown-timeout", "5s", "--webhook-configuration-name", "op.example.com",
		"--reconciliation-timeout", "90s", "--warmup", "--cache-unselected",
	})
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	mo := managerOptions(f, scheme, reconcile.Options{Prefix: "example.com"})
	if mo.Scheme != scheme || mo.QPS != 20 || mo.Burst != 30 || mo.MetricsBindAddress != ":8443" || mo.HealthProbeBindAddress != ":8081" ||
		!mo.LeaderElection || mo.LeaderElectionID != "op.gopf.dev" || mo.GracefulShutdownTimeout == nil || *mo.GracefulShutdownTimeout != 5*time.Second ||
		mo.Webhook.Name != "op.example.com" || mo.SkipNameValidation || mo.ReconciliationTimeout != 90*time.Second || !mo.Warmup ||
		!mo.CacheUnselected {
		t.Errorf("manager options = %+v", mo)
	}
	if got := mo.Engine.Namespaces; len(got) != 1 || got[0] != "app-*,!app-pr-*" {
		t.Errorf("the engine's namespaces are %q: the cache and the engine's scope both follow them", got)
	}
	if mo.Engine.Prefix != "example.com" {
		t.Errorf("the engine options given in code were lost: %+v", mo.Engine)
	}
}

func TestTheControllerOptionsReachControllerRuntime(t *testing.T) {
	c := controllerManagerOptions(ManagerOptions{ReconciliationTimeout: time.Minute, Warmup: true}, cache.Options{}, metricsserver.Options{}, nil).Controller
	if c.ReconciliationTimeout != time.Minute || c.EnableWarmup == nil || !*c.EnableWarmup || c.SkipNameValidation != nil {
		t.Errorf("controller options = %+v", c)
	}
	c = controllerManagerOptions(ManagerOptions{}, cache.Options{}, metricsserver.Options{}, nil).Controller
	if c.ReconciliationTimeout != 0 || c.EnableWarmup != nil {
		t.Errorf("the defaults set controller options: %+v", c)
	}
	if _, err := NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, handlers.NewRegistry(), ManagerOptions{ReconciliationTimeout: -time.Second}); err == nil {
		t.Error("a negative ReconciliationTimeout was accepted")
	}
	if _, err := NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, handlers.NewRegistry(), ManagerOptions{WatchServerTimeout: -time.Second}); err == nil {
		t.Error("a negative WatchServerTimeout was accepted")
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
			fs, f := cli.NewFlags("op", cli.WatchDefaults{Inactivity: transport.DefaultWatchInactivityTimeout})
			if err := fs.Parse(append([]string{"--metrics-bind-address", ":8443"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			mo, err := metricsOptions(managerOptions(f, runtime.NewScheme(), reconcile.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if mo.BindAddress != ":8443" || mo.SecureServing != tc.secure || (mo.FilterProvider != nil) != tc.secure {
				t.Errorf("metrics server options = %+v, want HTTPS and the authorization filter: %v", mo, tc.secure)
			}
		})
	}
}

func TestNewManagerRefusesAMetricsCertificateForPlainHTTP(t *testing.T) {
	if _, err := metricsOptions(ManagerOptions{MetricsInsecure: true, MetricsCertDir: "/certs"}); err == nil {
		t.Error("NewManager would accept a certificate directory for plain HTTP")
	}
}

func TestTheWatchTimeoutsOfMainOptionsAreTheFlagsDefaults(t *testing.T) {
	for _, tc := range []struct {
		opts                    MainOptions
		args                    []string
		inactivity, serverLimit time.Duration
	}{
		{MainOptions{}, nil, transport.DefaultWatchInactivityTimeout, 0},
		{MainOptions{}, []string{"--watch-inactivity-timeout=30s", "--watch-server-timeout=90s"}, 30 * time.Second, 90 * time.Second},
		{MainOptions{}, []string{"--watch-inactivity-timeout=0"}, -1, 0}, // no bound
		{MainOptions{WatchInactivityTimeout: time.Minute, WatchServerTimeout: 5 * time.Minute}, nil, time.Minute, 5 * time.Minute},
		{MainOptions{WatchInactivityTimeout: -1}, nil, -1, 0},
		{MainOptions{WatchInactivityTimeout: time.Minute, WatchServerTimeout: time.Minute}, []string{"--watch-server-timeout=2m"}, time.Minute, 2 * time.Minute},
	} {
		fs, f := cli.NewFlags("op", watchDefaults(tc.opts))
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		mo := managerOptions(f, runtime.NewScheme(), reconcile.Options{})
		if mo.WatchInactivityTimeout != tc.inactivity || mo.WatchServerTimeout != tc.serverLimit {
			t.Errorf("%+v %v: watch timeouts %s and %s, want %s and %s", tc.opts, tc.args,
				mo.WatchInactivityTimeout, mo.WatchServerTimeout, tc.inactivity, tc.serverLimit)
		}
	}
}
