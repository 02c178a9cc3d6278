/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

// The marker below hides this package from CRD generation, so that the
// repository-wide `make manifests` (controller-gen crd paths="./...") does
// not put the Database CRD into the repository's config/crd/bases. The
// example's own generate.sh runs controller-gen with this file overlaid
// away, and writes the CRD to examples/database/config/crd/bases.

// +kubebuilder:skip
package v1
