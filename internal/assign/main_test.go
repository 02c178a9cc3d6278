package assign

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/gopf-dev/gopf/internal/controlplane"
)

// controlPlane is the package's API server, started by the first test that
// needs one: the unit tests run without.
var controlPlane controlplane.Lazy

// apiServer returns the config of a real API server.
func apiServer(t *testing.T) *rest.Config { return controlPlane.Config(t) }

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { controlplane.Main(m, &controlPlane) }
