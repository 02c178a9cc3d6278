package webhook

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rotate makes a new serving certificate now, and a new CA first when ca is
// set, as the periodic check does when they near their end. For tests of
// the package webhook_test.
func Rotate(ctx context.Context, s *Server, ca bool) error {
	return s.certs.refresh(ctx, renewal{ca: ca, serving: true})
}

// NewSecretCertificates makes the certificates of a replica that keeps them
// in ref, reads them (making and storing them if needed) and returns the CA
// bundle and the serving certificate's serial number. For tests of the
// package webhook_test.
func NewSecretCertificates(ctx context.Context, c client.Client, ref SecretRef) ([]byte, string, error) {
	certs := &certificates{
		name: "replica", hosts: []string{"localhost", "127.0.0.1"}, validity: time.Hour, now: time.Now,
		log: logr.Discard(), store: secretStore{c: c, ref: ref},
	}
	if err := certs.refresh(ctx, renewal{}); err != nil {
		return nil, "", err
	}
	cert, err := certs.getCertificate(nil)
	if err != nil {
		return nil, "", err
	}
	return certs.caBundle(), cert.Leaf.SerialNumber.String(), nil
}
