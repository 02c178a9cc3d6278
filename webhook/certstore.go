package webhook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storedCerts are the PEM blocks gopf keeps for generated certificates:
// the CA bundle (the signing CA first) and the CA's key, the serving
// certificate and its key. A missing one is empty.
type storedCerts struct {
	caCert, caKey, cert, key []byte
}

// errStoreChanged means that another replica stored certificates since
// they were loaded.
var errStoreChanged = errors.New("the stored certificates changed meanwhile")

// certStore is where generated certificates are kept.
type certStore interface {
	// load returns what is stored, and a version to save against.
	load(ctx context.Context) (storedCerts, string, error)
	// save stores certs if the store still holds version, and returns
	// errStoreChanged if it does not.
	save(ctx context.Context, certs storedCerts, version string) error
	// where names the store, for messages.
	where() string
}

// dirStore keeps the certificates in files of a folder, for one process.
type dirStore struct{ dir string }

func (d dirStore) where() string { return d.dir }

func (d dirStore) load(context.Context) (storedCerts, string, error) {
	read := func(name string) []byte {
		data, _ := os.ReadFile(filepath.Join(d.dir, name)) // missing or unreadable: made anew
		return data
	}
	return storedCerts{caCert: read(caCertFile), caKey: read(caKeyFile), cert: read(certFile), key: read(keyFile)}, "", nil
}

func (d dirStore) save(_ context.Context, c storedCerts, _ string) error {
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{caKeyFile, c.caKey, 0o600}, {caCertFile, c.caCert, 0o644}, {keyFile, c.key, 0o600}, {certFile, c.cert, 0o644}} {
		if err := d.write(f.name, f.data, f.perm); err != nil {
			return err
		}
	}
	return nil
}

// write replaces a file of the folder atomically, so that a reader never
// sees half a certificate.
func (d dirStore) write(name string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.dir, "."+name+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(d.dir, name))
}

// secretStore keeps the certificates in a Secret of type kubernetes.io/tls
// (keys ca.crt, ca.key, tls.crt, tls.key), shared by every replica. Whoever
// gets there first creates it; writes are guarded by the Secret's
// resourceVersion, so two replicas never both replace it, and the loser
// takes the winner's certificates.
type secretStore struct {
	c   client.Client // reads straight from the API server: no informer on Secrets
	ref SecretRef
}

func (s secretStore) where() string { return "Secret " + s.ref.Namespace + "/" + s.ref.Name }

func (s secretStore) load(ctx context.Context) (storedCerts, string, error) {
	var secret corev1.Secret
	err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ref.Namespace, Name: s.ref.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return storedCerts{}, "", nil
	}
	if err != nil {
		return storedCerts{}, "", err
	}
	d := secret.Data
	return storedCerts{caCert: d[caCertFile], caKey: d[caKeyFile], cert: d[certFile], key: d[keyFile]}, secret.ResourceVersion, nil
}

func (s secretStore) save(ctx context.Context, c storedCerts, version string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ref.Namespace, Name: s.ref.Name, ResourceVersion: version,
			Labels: map[string]string{managedByLabel: managerName}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{caCertFile: c.caCert, caKeyFile: c.caKey, certFile: c.cert, keyFile: c.key},
	}
	var err error
	if version == "" {
		err = s.c.Create(ctx, secret)
	} else {
		err = s.c.Update(ctx, secret)
	}
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return fmt.Errorf("%w: %v", errStoreChanged, err)
	case apierrors.IsNotFound(err):
		// Deleted since it was read: start over with a new one.
		return fmt.Errorf("%w: %v", errStoreChanged, err)
	}
	return err
}
