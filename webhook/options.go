package webhook

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Options configure gopf's webhook server: where it listens, how the API
// server reaches it, where its certificates come from, and the webhook
// configurations it keeps in the cluster. The zero value is dev mode: a
// free port on 127.0.0.1, reached by URL, with a self-signed CA generated
// on first start and kept in a temporary folder.
type Options struct {
	// Name names the managed ValidatingWebhookConfiguration and
	// MutatingWebhookConfiguration (both are called Name) and ends the name
	// of every webhook in them. It must be a DNS subdomain, unique per
	// operator in the cluster. Default: "<program>.gopf.dev", after the
	// executable's file name.
	Name string

	// Host is the address the server listens on. Default: "127.0.0.1", or
	// "" (every interface) when Service is set.
	Host string
	// Port is the port the server listens on. Default: a free port, chosen
	// when NewServer runs; 9443 when Service is set.
	Port int

	// Service, when set, means the operator runs in the cluster behind this
	// Service: the webhook configurations point at it, and its DNS names
	// are in the serving certificate.
	Service *Service

	// URL is the base URL the API server calls when there is no Service,
	// such as "https://host.docker.internal:9443" for a cluster in
	// containers on this machine. Handler paths are appended to it.
	// Default: https://<Host>:<Port>, with 127.0.0.1 for an empty or
	// unspecified Host.
	URL string

	// CertDir is the folder of the certificates: ca.crt, ca.key, tls.crt
	// and tls.key when gopf makes them; ca.crt (optional), tls.crt and
	// tls.key when CertificatesFromFiles is set. Default: a folder named
	// after Name under the system's temporary folder, so that a restarted
	// operator keeps its CA.
	CertDir string

	// CertificatesFromFiles makes the server use the certificate and key in
	// CertDir as they are (tls.crt and tls.key, as a cert-manager Secret
	// provides them) and reload them whenever they change. The CA bundle of
	// the webhook configurations is CertDir/ca.crt, also reloaded; without
	// that file the API server verifies the server with its own trust roots.
	// By default gopf makes and rotates its own certificates.
	CertificatesFromFiles bool

	// CertSecret, when set, keeps the generated CA and serving certificate
	// in this Secret instead of CertDir, so that any number of replicas
	// serve one certificate and the webhook configurations get one CA
	// bundle: whichever replica finds the Secret missing (or its
	// certificates due for renewal) makes new ones and stores them, guarded
	// by the Secret's resourceVersion, and the others take what it stored
	// at their next check (every CheckInterval, one GET each). The operator
	// needs get, create and update on Secrets in that namespace. The
	// certificates are made when the server starts, so Setup (or, for an
	// operator without admission handlers, SetupFinalizers) must be called
	// with the server's manager. Not with CertDir or CertificatesFromFiles.
	CertSecret *SecretRef

	// Hosts are extra DNS names and IP addresses for the generated serving
	// certificate. It always holds localhost, 127.0.0.1, the host of URL,
	// and the DNS names of Service.
	Hosts []string

	// CertValidity is how long a generated serving certificate is valid;
	// the CA is valid ten times as long. A certificate is replaced when less
	// than a third of its validity is left. Default: one year.
	CertValidity time.Duration

	// CheckInterval is how often the certificates are checked: for renewal
	// when gopf makes them, for a new CA bundle when they come from files.
	// Default: one minute.
	CheckInterval time.Duration

	// StaticConfigurations leaves the webhook configurations to manifests
	// applied by other means (config/webhook with cert-manager): gopf only
	// serves the handlers and creates no configuration. By default gopf
	// creates and updates them, and removes the webhooks of non-persistent
	// handlers on shutdown.
	StaticConfigurations bool

	// Finalizers makes the server add gopf's finalizer to new objects as
	// they are created, to those the reconcile engine would give one
	// (objects a delete handler that is not Optional, a timer or a daemon
	// selects), so that the engine does not spend a write of its own on it
	// before the first handler runs: a create then costs one write instead
	// of two. The webhook fails open (failure policy Ignore, a 2 s
	// timeout) and never refuses an object; a create it did not see gets
	// the finalizer from the engine, as without it. It needs the managed
	// configurations (not StaticConfigurations) and covers the kinds the
	// engine handles from the start, not those whose CRD appears later.
	// Each create of such a kind costs the API server one call to the
	// webhook. When the operator is sharded with gopf's own assigner
	// (reconcile.Sharding without ExternalAssigner), the same create
	// webhook also labels each new object of the ring's kinds (children's
	// kinds included) for the shard the assigner would give it, so that
	// the assigner need not write it; what it misses, the assigner's next
	// pass labels. Default (FinalizersWithHandlers): on when the server
	// runs for admission handlers; FinalizersAlways also starts the server
	// for a registry without any; FinalizersNever: off, shard labels
	// included.
	Finalizers Finalizers

	// TLSOpts are applied to the server's TLS configuration, e.g. to turn
	// HTTP/2 off. gopf sets GetCertificate after them when it makes the
	// certificates.
	TLSOpts []func(*tls.Config)
}

// SecretRef names a Secret.
type SecretRef struct {
	Namespace, Name string
}

// Service is the in-cluster Service that routes webhook requests to the
// operator.
type Service struct {
	// Namespace and Name identify the Service.
	Namespace string
	Name      string
	// Port is the Service's port. Default: 443.
	Port int32
}

// dnsNames returns the names the API server uses to reach the Service.
func (s *Service) dnsNames() []string {
	return []string{
		s.Name + "." + s.Namespace + ".svc",
		s.Name + "." + s.Namespace + ".svc.cluster.local",
	}
}

const (
	defaultCertValidity  = 365 * 24 * time.Hour
	defaultCheckInterval = time.Minute
	defaultServicePort   = 9443
	// loopback is where the server listens without a Service, and the host
	// the API server calls when it listens on every address.
	loopback = "127.0.0.1"
)

// withDefaults fills in the defaults and checks the options. It chooses the
// free port, so it binds a socket for a moment.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = defaultName(os.Args[0])
	}
	if err := validFinalizers(o.Finalizers); err != nil {
		return o, err
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return o, fmt.Errorf("webhook configuration name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if err := o.defaultListener(); err != nil {
		return o, err
	}
	if err := o.defaultURL(); err != nil {
		return o, err
	}
	if err := o.defaultCertStore(); err != nil {
		return o, err
	}
	if o.CertValidity <= 0 {
		o.CertValidity = defaultCertValidity
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = defaultCheckInterval
	}
	o.Hosts = o.certHosts()
	return o, nil
}

// defaultListener checks Service and fills in where the server listens
// when Host and Port leave it open: port defaultServicePort behind a
// Service; else host 127.0.0.1 and a free port.
func (o *Options) defaultListener() error {
	if o.Service != nil {
		svc := *o.Service
		if svc.Namespace == "" || svc.Name == "" {
			return fmt.Errorf("the webhook Service needs a namespace and a name")
		}
		if svc.Port == 0 {
			svc.Port = 443
		}
		o.Service = &svc
		if o.Port == 0 {
			o.Port = defaultServicePort
		}
	} else if o.Host == "" {
		o.Host = loopback
	}
	if o.Port == 0 {
		port, err := freePort(o.Host)
		if err != nil {
			return fmt.Errorf("choosing a free port for the webhook server: %w", err)
		}
		o.Port = port
	}
	return nil
}

// defaultURL fills in, without a Service, the URL the API server calls: the
// listener's address (127.0.0.1 when it listens on every address). It
// checks the URL and drops a trailing slash.
func (o *Options) defaultURL() error {
	if o.Service == nil && o.URL == "" {
		host := o.Host
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = loopback
		}
		o.URL = "https://" + net.JoinHostPort(host, strconv.Itoa(o.Port))
	}
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("webhook URL %q must be https://host[:port][/path], with no user, query or fragment", o.URL)
		}
		o.URL = strings.TrimSuffix(o.URL, "/")
	}
	return nil
}

// defaultCertStore checks that generated certificates are kept in one place,
// the Secret CertSecret or the folder CertDir, and defaults the folder to
// one under the system's temporary folder.
func (o *Options) defaultCertStore() error {
	if ref := o.CertSecret; ref != nil {
		switch {
		case ref.Namespace == "" || ref.Name == "":
			return fmt.Errorf("the webhook certificate Secret needs a namespace and a name")
		case o.CertificatesFromFiles:
			return fmt.Errorf("the webhook certificates come either from files or from the Secret %s/%s, not both", ref.Namespace, ref.Name)
		case o.CertDir != "":
			return fmt.Errorf("the generated webhook certificates are kept either in %s or in the Secret %s/%s, not both", o.CertDir, ref.Namespace, ref.Name)
		}
		secret := *ref
		o.CertSecret = &secret
	} else if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "gopf-webhook", o.Name)
	}
	return nil
}

// certHosts lists the names the serving certificate must hold.
func (o Options) certHosts() []string {
	hosts := append([]string{"localhost", loopback}, o.Hosts...)
	if o.URL != "" {
		if u, err := url.Parse(o.URL); err == nil {
			hosts = append(hosts, u.Hostname())
		}
	}
	if o.Service != nil {
		hosts = append(hosts, o.Service.dnsNames()...)
	}
	seen := map[string]bool{}
	var out []string
	for _, h := range hosts {
		if h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// defaultName derives a configuration name from the program's path:
// "/bin/my_operator" gives "my-operator.gopf.dev".
func defaultName(program string) string {
	base := strings.ToLower(filepath.Base(program))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	name := strings.Trim(b.String(), "-.")
	if name == "" {
		name = "operator"
	}
	return name + ".gopf.dev"
}

// freePort asks the system for a free TCP port on host. The port is free
// when freePort returns; another process could take it before the server
// listens, which is unlikely enough for development and tests.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// BindFlags adds command-line flags for the options to fs, with the
// options' current values as defaults:
//
//	--webhook-bind-address host:port   where the server listens
//	--webhook-service ns/name[:port]   the in-cluster Service in front of it
//	--webhook-url URL                  the base URL the API server calls
//	--webhook-cert-dir DIR             the certificates' folder
//	--webhook-cert-files               use the certificates in DIR as they are
//	--webhook-cert-secret ns/name      keep the generated certificates in this Secret
//	--webhook-hosts a,b                extra names for the generated certificate
//	--webhook-configuration-name NAME  the managed configurations' name
//	--webhook-manage-configurations    create the configurations (default true)
//	--webhook-finalizers always|never  add finalizers (and shard labels) at admission (default: with admission handlers)
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.Func("webhook-bind-address", "The address the admission webhook server binds to, as host:port. Default: a free port on 127.0.0.1, or :9443 with --webhook-service.", func(s string) error {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return err
		}
		o.Host = host
		o.Port, err = strconv.Atoi(port)
		return err
	})
	fs.Func("webhook-service", "The Service in front of the webhook server in the cluster, as namespace/name[:port]. Without it the API server calls --webhook-url.", func(s string) error {
		svc, err := parseService(s)
		o.Service = svc
		return err
	})
	fs.StringVar(&o.URL, "webhook-url", o.URL, "The base URL the API server calls for admission requests. Default: https://127.0.0.1:<port>.")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", o.CertDir, "The folder of the webhook server's certificates. Default: a folder under the system's temporary folder.")
	fs.BoolVar(&o.CertificatesFromFiles, "webhook-cert-files", o.CertificatesFromFiles, "Serve tls.crt and tls.key from --webhook-cert-dir (e.g. from cert-manager), with ca.crt as the CA bundle, instead of generating certificates.")
	fs.Func("webhook-cert-secret", "Keep the generated webhook certificates in this Secret, as namespace/name, shared by every replica, instead of --webhook-cert-dir.", func(s string) error {
		ns, name, ok := strings.Cut(s, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("want namespace/name, got %q", s)
		}
		o.CertSecret = &SecretRef{Namespace: ns, Name: name}
		return nil
	})
	fs.Func("webhook-hosts", "Extra DNS names and IP addresses, comma-separated, for the generated serving certificate.", func(s string) error {
		for _, h := range strings.Split(s, ",") {
			if h = strings.TrimSpace(h); h != "" {
				o.Hosts = append(o.Hosts, h)
			}
		}
		return nil
	})
	fs.StringVar(&o.Name, "webhook-configuration-name", o.Name, "The name of the webhook configurations gopf manages. Default: <program>.gopf.dev.")
	fs.Func("webhook-finalizers", `Add gopf's finalizer to new objects at admission, saving a write per create: "always" (and serve webhooks for that alone), "never", or by default when admission handlers are served.`, func(s string) error {
		o.Finalizers = Finalizers(s)
		return validFinalizers(o.Finalizers)
	})
	fs.Var(invertedBool{&o.StaticConfigurations}, "webhook-manage-configurations", "Create and update the webhook configurations; false leaves them to static manifests.")
}

// parseService parses namespace/name[:port].
func parseService(s string) (*Service, error) {
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" || rest == "" {
		return nil, fmt.Errorf("want namespace/name[:port], got %q", s)
	}
	svc := &Service{Namespace: ns, Name: rest}
	if name, port, ok := strings.Cut(rest, ":"); ok {
		p, err := strconv.ParseInt(port, 10, 32)
		if err != nil || p <= 0 {
			return nil, fmt.Errorf("bad port in %q", s)
		}
		svc.Name, svc.Port = name, int32(p)
	}
	return svc, nil
}

// invertedBool is a boolean flag that sets the negation of a field.
type invertedBool struct{ p *bool }

func (b invertedBool) String() string {
	if b.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.p)
}

func (b invertedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = !v
	return nil
}

func (b invertedBool) IsBoolFlag() bool { return true }
