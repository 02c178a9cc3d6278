package spawn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

// loggingKind is a kind whose causes log to the logger they are given.
type loggingKind struct{ kind }

func (*loggingKind) Cause(_ *contract.Handler, _ client.Object, log logr.Logger) *handlers.Cause {
	return &handlers.Cause{Log: log}
}

func TestADaemonsLogLinesSayWhichRetryItIsAndItsFailuresAreErrors(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*corev1.ConfigMap], c *handlers.Cause) error {
		c.Log.Info("attempt")
		if c.Retry < 2 {
			return handlers.Temporary(errors.New("not yet"), time.Millisecond)
		}
		return nil
	}, handlers.ID("d"))
	k := &loggingKind{}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}}
	s := New(k, configMaps(log, obj))
	run(t, s)
	s.Sync(types.NamespacedName{Namespace: "ns", Name: "o"}, obj, "{}", contract.SetOf(reg).Handlers(spec.KindDaemon))

	want := []string{`"retry"=0`, `"retry"=1`, `"retry"=2`}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		var attempts []string
		for _, l := range lines {
			if strings.Contains(l, `"msg"="attempt"`) {
				for _, w := range want {
					if strings.Contains(l, w) {
						attempts = append(attempts, w)
					}
				}
			}
		}
		got, all := fmt.Sprint(attempts), strings.Join(lines, "\n")
		mu.Unlock()
		if got == fmt.Sprint(want) {
			for _, l := range strings.Split(all, "\n") {
				// funcr writes a level on info lines only.
				if strings.Contains(l, "daemon failed") && (strings.Contains(l, `"level"=`) || !strings.Contains(l, `"error"="temporary error (retry in 1ms): not yet"`)) {
					t.Errorf("a daemon's failure was not logged as an error: %s", l)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's attempts logged %s, want %v; lines:\n%s", got, want, all)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
