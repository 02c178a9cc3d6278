// Package transport holds what gopf adds to the manager's HTTP paths: a
// bound on silent watch streams (BoundWatches), so that an informer whose
// connection died without an error watches again, and the authentication
// and authorization of the metrics endpoint (MetricsAuth), with
// TokenReviews and SubjectAccessReviews cached per token.
package transport
