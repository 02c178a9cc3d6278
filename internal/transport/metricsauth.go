package transport

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a verdict of the API server on a token and request is reused:
// a scraper asks every few seconds, and a revoked binding or token takes
// effect after at most this long.
const (
	allowedFor = time.Minute
	deniedFor  = 10 * time.Second
	verdicts   = 1024 // remembered at most; all are forgotten when full
)

// MetricsAuth is the metrics endpoint's filter: a request passes if the API
// server authenticates its bearer token (a TokenReview) and authorizes the
// token's user to use the request's path with the request's verb (a
// SubjectAccessReview of a non-resource URL), the check kubebuilder's
// scaffold makes. It is gopf's own, small version of controller-runtime's
// filters.WithAuthenticationAndAuthorization, whose dependencies (the API
// server's libraries) cost an operator more memory than all of gopf.
func MetricsAuth(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	a := &reviewer{authn: authn.TokenReviews(), authz: authz.SubjectAccessReviews(), seen: map[verdictKey]verdict{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code := a.check(r, log)
			if code != http.StatusOK {
				http.Error(w, http.StatusText(code), code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

type verdictKey struct {
	token      [sha256.Size]byte
	verb, path string
}

type verdict struct {
	code  int
	until time.Time
}

// reviewer asks the API server about requests and remembers its answers.
type reviewer struct {
	authn authnclient.TokenReviewInterface
	authz authzclient.SubjectAccessReviewInterface

	mu   sync.Mutex
	seen map[verdictKey]verdict
}

// check returns the HTTP status the request gets: 200 to pass, 401 without
// a token the API server accepts, 403 when its user may not, 500 when the
// API server could not be asked.
func (a *reviewer) check(r *http.Request, log logr.Logger) int {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token = strings.TrimSpace(token); !ok || token == "" {
		return http.StatusUnauthorized
	}
	key := verdictKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
	now := time.Now()
	a.mu.Lock()
	v, ok := a.seen[key]
	a.mu.Unlock()
	if ok && now.Before(v.until) {
		return v.code
	}
	code := a.review(r, token, key, log)
	if code == http.StatusInternalServerError {
		return code // not remembered: the next request asks again
	}
	ttl := deniedFor
	if code == http.StatusOK {
		ttl = allowedFor
	}
	a.mu.Lock()
	if len(a.seen) >= verdicts {
		clear(a.seen)
	}
	a.seen[key] = verdict{code: code, until: now.Add(ttl)}
	a.mu.Unlock()
	return code
}

// review asks the API server who the token is and whether they may.
func (a *reviewer) review(r *http.Request, token string, key verdictKey, log logr.Logger) int {
	tr, err := a.authn.Create(r.Context(), &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		log.Error(err, "metrics: the TokenReview failed")
		return http.StatusInternalServerError
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized
	}
	u := tr.Status.User
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := a.authz.Create(r.Context(), &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: key.path, Verb: key.verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		log.Error(err, "metrics: the SubjectAccessReview failed")
		return http.StatusInternalServerError
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden
	}
	return http.StatusOK
}
