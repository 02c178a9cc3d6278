/*
Package webhook serves gopf's admission handlers (handlers.OnValidate and
handlers.OnMutate) on the manager's webhook server, and takes care of the
two chores controller-runtime leaves to its users: certificates, and the
ValidatingWebhookConfiguration and MutatingWebhookConfiguration that tell
the API server to call the operator.

Wiring it into a manager takes two calls, because the webhook server is part
of the manager from its creation:

	srv, err := webhook.NewServer(webhook.Options{})
	...
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{WebhookServer: srv, ...})
	...
	err = webhook.Setup(mgr, reg)

NewServer fills in the options and makes (or loads, or reads from files) the
certificates, so problems surface before the manager starts. Setup registers
one path per handler, resolves each handler's kind with the REST mapper, and
adds a runnable that keeps the webhook configurations in the cluster.

# Development and tests

With zero Options the server listens on a free port of 127.0.0.1, makes a
self-signed CA and a serving certificate for 127.0.0.1 and localhost, and
configures the webhooks with a URL (https://127.0.0.1:<port>/...) and that
CA as the bundle. An operator running on the same machine as its API server
(envtest, `make run`) receives admission requests with no further setup.
For a cluster in containers on the same machine, set URL to an address the
cluster can reach (such as https://host.docker.internal:<port>) and add its
host to Hosts.

# In a cluster

Set Service to the Service in front of the operator's pods: the
configurations then name the Service instead of a URL, and the generated
certificate holds the Service's DNS names. Certificates can be generated
(the CA lives in CertDir, or, for several replicas, in the Secret named by
CertSecret, which they share: the first replica to need certificates makes
and stores them, and the others take them, with the Secret's
resourceVersion deciding between replicas that make them at once) or
come from files, such as a cert-manager Certificate's Secret mounted at
CertDir: set CertificatesFromFiles, and the server reloads tls.crt and
tls.key when they change and publishes a changed ca.crt to the
configurations. Users who prefer static manifests (config/webhook and
config/certmanager) set StaticConfigurations and point their manifests at
the kind paths that Setup documents.

# Certificates

Generated certificates are replaced when less than a third of their
validity is left; the server checks every CheckInterval and presents a new
certificate from the next TLS handshake on, without a restart. A new CA is
added to the front of the bundle, the configurations are updated, and only
then does the server switch to a certificate signed by it; the old CA stays
in the bundle until it expires.

# Configurations

The managed configurations are both named Options.Name and hold one
webhook per handler, named <id>.<kind>.<group>.<Name>, with the handler's
kind and operations as rules, its label filters as object selector, its
failure policy, side effects and timeout, admissionReviewVersions v1, the
CA bundle and the client config. They are created when the server is
serving and updated when the bundle changes; on a clean shutdown the
webhooks of non-persistent handlers are removed (a configuration left empty
is deleted), before the server stops answering. A configuration that
would hold no webhook is neither created nor deleted.

# Creates

Besides the handlers' webhooks, the mutating configuration holds a create
webhook, gopf-create.<kind>.<group>.<Name> at /create/<group>/<version>/<kind>,
for each kind whose new objects the reconcile engine may give its
finalizer and, when the operator is sharded with gopf's own assigner, for
each kind of the ring: it adds the finalizer and the shard label in one
patch as the object is stored, so that neither costs a write later (see
Options.Finalizers). It fails open with a 2 s timeout; what it misses,
the engine and the assigner do as they would without it.
*/
package webhook
