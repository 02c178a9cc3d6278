package webhook

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// The certificate files in Options.CertDir.
const (
	caCertFile = "ca.crt" // the CA bundle: the signing CA first, then older CAs still valid
	caKeyFile  = "ca.key" // the signing CA's key
	certFile   = "tls.crt"
	keyFile    = "tls.key"
)

// pemCertificate is the PEM block type of a certificate.
const pemCertificate = "CERTIFICATE"

// caLifetimes is how many serving-certificate lifetimes a generated CA
// lives.
const caLifetimes = 10

// backdate makes certificates valid a little before they are made, for
// clocks that disagree slightly.
const backdate = 5 * time.Minute

// renewalDue reports whether a certificate valid from notBefore to notAfter
// should be replaced at now: when less than a third of its lifetime is left.
func renewalDue(notBefore, notAfter, now time.Time) bool {
	lifetime := notAfter.Sub(notBefore)
	return !now.Before(notAfter.Add(-lifetime / 3))
}

// keyPair is a certificate with its private key, parsed and as PEM.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// renewal says which certificates to make anew.
type renewal struct {
	ca, serving bool
}

// planRenewal decides what to make anew, given the CA and serving
// certificate found on disk (nil when missing or unusable), the names the
// serving certificate must hold, and the time. A new CA always brings a new
// serving certificate.
func planRenewal(ca, serving *keyPair, hosts []string, now time.Time) renewal {
	if ca == nil || !ca.cert.IsCA || renewalDue(ca.cert.NotBefore, ca.cert.NotAfter, now) {
		return renewal{ca: true, serving: true}
	}
	if serving == nil || renewalDue(serving.cert.NotBefore, serving.cert.NotAfter, now) ||
		serving.cert.CheckSignatureFrom(ca.cert) != nil || !covers(serving.cert, hosts) {
		return renewal{serving: true}
	}
	return renewal{}
}

// covers reports whether cert is valid for every host.
func covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// newCA makes a self-signed CA certificate.
func newCA(name string, validity time.Duration, now time.Time) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name + " webhook CA", Organization: []string{managerName}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return makeCert(tmpl, nil)
}

// newServingCert makes a serving certificate for hosts signed by ca. It
// does not outlive the CA.
func newServingCert(ca *keyPair, hosts []string, validity time.Duration, now time.Time) (*keyPair, error) {
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0], Organization: []string{managerName}},
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return makeCert(tmpl, ca)
}

// makeCert creates a key and a certificate from tmpl, signed by parent, or
// self-signed when parent is nil.
func makeCert(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return parseKeyPair(
		pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	)
}

// parseKeyPair parses the first certificate of certPEM and the key of
// keyPEM, and checks that they belong together.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the private key cannot sign")
	}
	block, _ := pem.Decode(certPEM)
	return &keyPair{cert: pair.Leaf, key: signer, certPEM: pem.EncodeToMemory(block), keyPEM: keyPEM}, nil
}

// parseCerts returns the certificates of a PEM bundle, skipping anything
// that does not parse.
func parseCerts(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		if block.Type != pemCertificate {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// newBundle puts the new CA first, then the CAs of the old bundle that are
// still valid at now, so that certificates they signed stay trusted until
// the API server has the new bundle and the server serves a new certificate.
func newBundle(caPEM, old []byte, now time.Time) []byte {
	out := append([]byte(nil), caPEM...)
	for _, c := range parseCerts(old) {
		if now.Before(c.NotAfter) && c.IsCA {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: c.Raw})...)
		}
	}
	return out
}

// certificates keeps the server's certificates and the CA bundle the API
// server needs: it makes them, rotates them, or reads them from files, and
// tells the webhook configurations (through publish) when the bundle
// changes. Generated certificates are kept in a store: the folder, or a
// Secret that replicas share.
type certificates struct {
	dir       string
	fromFiles bool
	name      string
	hosts     []string
	validity  time.Duration
	now       func() time.Time
	log       logr.Logger

	mu           sync.Mutex
	store        certStore                                      // where generated certificates are kept; nil until known
	bundle       []byte                                         // the CA bundle
	published    []byte                                         // the bundle publish last accepted
	hasPublished bool                                           // published is set
	publish      func(ctx context.Context, bundle []byte) error // nil: nobody to tell
	serving      atomic.Pointer[tls.Certificate]                // what the server presents (generated certificates only)
}

// getCertificate serves the current certificate; it is the server's
// tls.Config.GetCertificate when gopf makes the certificates.
func (c *certificates) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert := c.serving.Load()
	if cert == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return cert, nil
}

// caBundle returns the CA bundle the API server should trust.
func (c *certificates) caBundle() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bundle
}

// setStore sets where generated certificates are kept.
func (c *certificates) setStore(s certStore) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store = s
}

// hasStore reports whether the store is known.
func (c *certificates) hasStore() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store != nil
}

// attach calls fn with the bundle and, if that succeeds, calls it again
// whenever the bundle changes, until detach.
func (c *certificates) attach(ctx context.Context, fn func(ctx context.Context, bundle []byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := fn(ctx, c.bundle); err != nil {
		return err
	}
	c.publish, c.published, c.hasPublished = fn, c.bundle, true
	return nil
}

// detach stops the calls of attach's function and then calls fn once with
// the bundle.
func (c *certificates) detach(ctx context.Context, fn func(ctx context.Context, bundle []byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publish = nil
	return fn(ctx, c.bundle)
}

// storeAttempts bounds how often refresh re-reads a store that another
// replica wrote meanwhile.
const storeAttempts = 5

// refresh brings the certificates up to date: it reads them from files,
// or from the store, making whatever planRenewal (or force) asks for and
// storing it. When another replica stored certificates meanwhile, refresh
// takes those instead of its own. A changed CA bundle is published before
// the server presents a certificate that needs it; if publishing fails,
// the server keeps its certificate and refresh reports the error (the next
// refresh tries again).
func (c *certificates) refresh(ctx context.Context, force renewal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fromFiles {
		return c.refreshFromFilesLocked(ctx)
	}
	if c.store == nil {
		return errors.New("the store of the webhook certificates is not set up (webhook.Setup was not called with this server's manager)")
	}
	serving, bundle, err := c.loadOrRenewLocked(ctx, force)
	if err != nil {
		return err
	}
	c.bundle = bundle
	if err := c.publishLocked(ctx); err != nil {
		return err
	}
	return c.presentLocked(serving)
}

// refreshFromFilesLocked reads the CA bundle from its file, when there is
// one, and publishes it; the server reads the certificate files itself.
func (c *certificates) refreshFromFilesLocked(ctx context.Context) error {
	bundle, err := os.ReadFile(filepath.Join(c.dir, caCertFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	c.bundle = bundle
	return c.publishLocked(ctx)
}

// loadOrRenewLocked returns the serving certificate and the CA bundle of
// the store, after making and storing anew what planRenewal (or force)
// asks for. When another replica stored certificates meanwhile, it loads
// again and takes those, up to storeAttempts times.
func (c *certificates) loadOrRenewLocked(ctx context.Context, force renewal) (*keyPair, []byte, error) {
	for attempt := 1; ; attempt++ {
		stored, version, err := c.store.load(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the webhook certificates from %s: %w", c.store.where(), err)
		}
		ca := c.parse(stored.caCert, stored.caKey, caCertFile)
		serving := c.parse(stored.cert, stored.key, certFile)
		now := c.now()
		plan := planRenewal(ca, serving, c.hosts, now)
		plan.ca = plan.ca || force.ca
		plan.serving = plan.serving || force.serving || plan.ca
		if !plan.ca && !plan.serving {
			return serving, stored.caCert, nil
		}
		if ca, serving, err = c.renew(plan, &stored, ca, now); err != nil {
			return nil, nil, err
		}
		err = c.store.save(ctx, stored, version)
		if errors.Is(err, errStoreChanged) && attempt < storeAttempts {
			// Another replica stored certificates meanwhile: use those
			// (they are as fresh as ours would be).
			force = renewal{}
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("storing the webhook certificates in %s: %w", c.store.where(), err)
		}
		if plan.ca {
			c.log.Info("made a new webhook CA", "store", c.store.where(), "notAfter", ca.cert.NotAfter)
		}
		c.log.Info("made a new webhook serving certificate", "store", c.store.where(), "hosts", c.hosts, "notAfter", serving.cert.NotAfter)
		return serving, stored.caCert, nil
	}
}

// renew makes a new serving certificate, signed by a new CA if plan.ca
// (else by ca), and puts them into stored: a new CA goes in front of the
// bundle. It returns the signing CA and the serving certificate.
func (c *certificates) renew(plan renewal, stored *storedCerts, ca *keyPair, now time.Time) (*keyPair, *keyPair, error) {
	if plan.ca {
		var err error
		if ca, err = newCA(c.name, caLifetimes*c.validity, now); err != nil {
			return nil, nil, fmt.Errorf("making a webhook CA: %w", err)
		}
		stored.caCert, stored.caKey = newBundle(ca.certPEM, stored.caCert, now), ca.keyPEM
	}
	serving, err := newServingCert(ca, c.hosts, c.validity, now)
	if err != nil {
		return nil, nil, fmt.Errorf("making a webhook serving certificate: %w", err)
	}
	stored.cert, stored.key = serving.certPEM, serving.keyPEM
	return ca, serving, nil
}

// presentLocked makes serving the certificate the server presents, unless
// it presents it already.
func (c *certificates) presentLocked(serving *keyPair) error {
	if cur := c.serving.Load(); cur != nil && bytes.Equal(cur.Certificate[0], serving.cert.Raw) {
		return nil
	}
	pair, err := tls.X509KeyPair(serving.certPEM, serving.keyPEM)
	if err != nil {
		return err
	}
	c.serving.Store(&pair)
	return nil
}

// parse returns the key pair of certPEM and keyPEM, or nil if either is
// missing or they do not belong together (which it logs: the pair is
// replaced).
func (c *certificates) parse(certPEM, keyPEM []byte, what string) *keyPair {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil
	}
	pair, err := parseKeyPair(certPEM, keyPEM)
	if err != nil {
		c.log.Info("replacing an unusable webhook certificate", "store", c.store.where(), "certificate", what, "error", err.Error())
		return nil
	}
	return pair
}

// publishLocked hands a changed bundle to publish.
func (c *certificates) publishLocked(ctx context.Context) error {
	if c.hasPublished && bytes.Equal(c.bundle, c.published) {
		return nil
	}
	if c.publish != nil {
		if err := c.publish(ctx, c.bundle); err != nil {
			return fmt.Errorf("updating the webhook configurations with a new CA bundle: %w", err)
		}
	}
	c.published, c.hasPublished = c.bundle, true
	return nil
}
