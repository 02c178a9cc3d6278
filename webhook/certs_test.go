package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRenewalIsDueWhenLessThanAThirdOfTheLifetimeIsLeft(t *testing.T) {
	from, to := t0, t0.Add(90*24*time.Hour)
	cases := map[time.Duration]bool{
		0:                   false,
		59 * 24 * time.Hour: false,
		60 * 24 * time.Hour: true,
		89 * 24 * time.Hour: true,
		91 * 24 * time.Hour: true,
	}
	for after, want := range cases {
		if got := renewalDue(from, to, from.Add(after)); got != want {
			t.Errorf("renewalDue %s after the start = %v, want %v", after, got, want)
		}
	}
}

func mustCA(t *testing.T, validity time.Duration, now time.Time) *keyPair {
	t.Helper()
	ca, err := newCA("test", validity, now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustServing(t *testing.T, ca *keyPair, hosts []string, validity time.Duration, now time.Time) *keyPair {
	t.Helper()
	kp, err := newServingCert(ca, hosts, validity, now)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestPlanRenewalReplacesWhatIsMissingOldOrWrong(t *testing.T) {
	hosts := []string{"localhost", "127.0.0.1"}
	year := 365 * 24 * time.Hour
	ca := mustCA(t, 10*year, t0)
	other := mustCA(t, 10*year, t0)
	good := mustServing(t, ca, hosts, year, t0)
	cases := []struct {
		name     string
		ca, leaf *keyPair
		hosts    []string
		now      time.Time
		want     renewal
	}{
		{"nothing on disk", nil, nil, hosts, t0, renewal{ca: true, serving: true}},
		{"all fine", ca, good, hosts, t0.Add(24 * time.Hour), renewal{}},
		{"CA near its end", ca, good, hosts, t0.Add(7 * year), renewal{ca: true, serving: true}},
		{"a serving certificate is not a CA", good, good, hosts, t0, renewal{ca: true, serving: true}},
		{"no serving certificate", ca, nil, hosts, t0, renewal{serving: true}},
		{"serving certificate near its end", ca, good, hosts, t0.Add(250 * 24 * time.Hour), renewal{serving: true}},
		{"signed by another CA", other, good, hosts, t0, renewal{serving: true}},
		{"a host is missing", ca, good, append(hosts, "svc.ns.svc"), t0, renewal{serving: true}},
	}
	for _, c := range cases {
		if got := planRenewal(c.ca, c.leaf, c.hosts, c.now); got != c.want {
			t.Errorf("%s: plan = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestAServingCertificateDoesNotOutliveItsCA(t *testing.T) {
	ca := mustCA(t, time.Hour, t0)
	leaf := mustServing(t, ca, []string{"localhost"}, 24*time.Hour, t0)
	if leaf.cert.NotAfter.After(ca.cert.NotAfter) {
		t.Errorf("serving certificate ends %s, after its CA (%s)", leaf.cert.NotAfter, ca.cert.NotAfter)
	}
}

func testCerts(t *testing.T, now *time.Time) *certificates {
	dir := t.TempDir()
	return &certificates{
		dir:      dir,
		store:    dirStore{dir: dir},
		name:     "test",
		hosts:    []string{"localhost", "127.0.0.1"},
		validity: 90 * 24 * time.Hour,
		now:      func() time.Time { return *now },
		log:      logr.Discard(),
	}
}

func served(t *testing.T, c *certificates) *x509.Certificate {
	t.Helper()
	cert, err := c.getCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Leaf
}

func TestCertificatesAreMadeOnceAndReusedAcrossRestarts(t *testing.T) {
	now := t0
	c := testCerts(t, &now)
	if err := c.refresh(context.Background(), renewal{}); err != nil {
		t.Fatal(err)
	}
	first, bundle := served(t, c), c.caBundle()
	if err := parsedBy(bundle, first); err != nil {
		t.Fatalf("the served certificate does not verify with the bundle: %v", err)
	}

	// A new process on the same folder finds the same certificates.
	again := testCerts(t, &now)
	again.dir, again.store = c.dir, c.store
	if err := again.refresh(context.Background(), renewal{}); err != nil {
		t.Fatal(err)
	}
	if served(t, again).SerialNumber.Cmp(first.SerialNumber) != 0 || !bytes.Equal(again.caBundle(), bundle) {
		t.Error("a restart made new certificates although the old ones were fine")
	}
	for _, f := range []string{caCertFile, caKeyFile, certFile, keyFile} {
		if _, err := os.Stat(filepath.Join(c.dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}

func TestTheServingCertificateIsRotatedWithTheSameCA(t *testing.T) {
	now := t0
	c := testCerts(t, &now)
	if err := c.refresh(context.Background(), renewal{}); err != nil {
		t.Fatal(err)
	}
	first, bundle := served(t, c), c.caBundle()
	now = t0.Add(70 * 24 * time.Hour) // less than a third of 90 days left
	if err := c.refresh(context.Background(), renewal{}); err != nil {
		t.Fatal(err)
	}
	second := served(t, c)
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the serving certificate was not rotated")
	}
	if !bytes.Equal(c.caBundle(), bundle) {
		t.Error("the CA bundle changed although the CA is young")
	}
	if err := parsedBy(bundle, second); err != nil {
		t.Errorf("the new certificate does not verify with the bundle: %v", err)
	}
}

func TestANewCAIsPublishedBeforeTheServerPresentsACertificateSignedByIt(t *testing.T) {
	now := t0
	c := testCerts(t, &now)
	ctx := context.Background()
	if err := c.refresh(ctx, renewal{}); err != nil {
		t.Fatal(err)
	}
	var published [][]byte
	failing := true
	if err := c.attach(ctx, func(ctx context.Context, bundle []byte) error {
		if failing && len(published) > 0 {
			return errors.New("API server unavailable")
		}
		published = append(published, bundle)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	oldBundle, oldCert := c.caBundle(), served(t, c)

	if err := c.refresh(ctx, renewal{ca: true}); err == nil {
		t.Fatal("refresh succeeded although the new bundle could not be published")
	}
	if served(t, c).SerialNumber.Cmp(oldCert.SerialNumber) != 0 {
		t.Fatal("the server switched certificates before the API server had the new CA")
	}
	newBundle := c.caBundle()
	if len(parseCerts(newBundle)) != 2 {
		t.Fatalf("the bundle holds %d CAs, want the new and the old one", len(parseCerts(newBundle)))
	}

	failing = false
	if err := c.refresh(ctx, renewal{}); err != nil {
		t.Fatal(err)
	}
	if len(published) != 2 || !bytes.Equal(published[1], newBundle) {
		t.Fatalf("published %d bundles, want the first and the new one", len(published))
	}
	cert := served(t, c)
	if cert.SerialNumber.Cmp(oldCert.SerialNumber) == 0 {
		t.Fatal("the server kept the certificate of the old CA")
	}
	if err := parsedBy(newBundle, cert); err != nil {
		t.Errorf("the new certificate does not verify with the new bundle: %v", err)
	}
	if parsedBy(oldBundle, cert) == nil {
		t.Error("the new certificate verifies with the old CA alone: it was not signed by the new CA")
	}
}

func TestCertificatesFromFilesPublishAChangedCABundle(t *testing.T) {
	now := t0
	gen := testCerts(t, &now)
	if err := gen.refresh(context.Background(), renewal{}); err != nil {
		t.Fatal(err)
	}
	c := testCerts(t, &now)
	c.dir, c.fromFiles = gen.dir, true
	var published int
	if err := c.refresh(context.Background(), renewal{}); err != nil {
		t.Fatal(err)
	}
	if err := c.attach(context.Background(), func(context.Context, []byte) error { published++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.refresh(context.Background(), renewal{}); err != nil || published != 1 {
		t.Fatalf("unchanged files: err %v, published %d times, want once", err, published)
	}
	if err := os.WriteFile(filepath.Join(c.dir, caCertFile), mustCA(t, time.Hour, t0).certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.refresh(context.Background(), renewal{}); err != nil || published != 2 {
		t.Fatalf("changed ca.crt: err %v, published %d times, want twice", err, published)
	}
}

// parsedBy verifies cert against the CAs of bundle.
func parsedBy(bundle []byte, cert *x509.Certificate) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: cert.NotBefore.Add(time.Hour), DNSName: "localhost"})
	return err
}
