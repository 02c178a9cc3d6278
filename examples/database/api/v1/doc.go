/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

// Package v1 defines Database (db.example.gopf.dev/v1), the kind the
// database example operator manages: a database server of a chosen engine
// and version, run as a StatefulSet with a Service and, optionally, a backup
// CronJob.
//
// The CRD lives in examples/database/config/crd/bases, not in the
// repository's config/: see skip.go for how the repository-wide `make
// manifests` is kept from picking this package up, and ../../generate.go for
// the commands that regenerate the CRD and the deep-copy methods.
//
// +kubebuilder:object:generate=true
// +groupName=db.example.gopf.dev
package v1
