// Package rbac works out, from a registry, the RBAC rules an operator's
// handlers need (Permissions), prints them as a ClusterRole or as
// kubebuilder markers (ClusterRoleYAML, KubebuilderMarkers), and compares
// them with the rules a deployment grants (GrantedRules, MissingRules,
// MissingPermissions). It reads registrations only and works offline: the
// operator's --print-rbac and --check-rbac, gopf.CheckPermissions and a
// deployment's tests use it.
package rbac
