// Package deploy holds the tests of what takes a gopf operator to a
// cluster: the image the Dockerfile builds (a static binary that starts and
// stops cleanly), the manifests under config/ that `make deploy` and `make
// build-installer` apply (accepted by a real API server, Pod Security
// "restricted"), and the RBAC they grant compared with what the handlers
// need (rbac.Permissions).
//
// The tests run against a control plane from gopf's envtest package and
// build config/ with the kustomize version the Makefile names: bin/'s copy
// when `make kustomize` made one, `go run` from the module proxy otherwise.
package deploy
