package gopf_test

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	logger := logs.logger()
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}},
		Logger:       &logger,
		BeforeTests: func(cp *envtest.ControlPlane) error {
			cfg = cp.Config
			return nil
		},
	})
}

const timeout = 60 * time.Second

var scheme = envtest.NewScheme(kopfv1.AddToScheme)
