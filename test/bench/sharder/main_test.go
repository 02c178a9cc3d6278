package sharder

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the tests leave no goroutine behind: the test's
// informer and the waits on the processes it started end with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
