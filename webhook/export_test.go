package webhook

import "context"

// Rotate makes a new serving certificate now, and a new CA first when ca is
// set, as the periodic check does when they near their end. For tests of
// the package webhook_test.
func Rotate(ctx context.Context, s *Server, ca bool) error {
	return s.certs.refresh(ctx, renewal{ca: ca, serving: true})
}
