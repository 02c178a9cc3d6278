/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

// Package v1 defines KopfExample (kopf.dev/v1), the example kind used by
// gopf's examples and tests.
//
// It is deliberately the same kind that Kopf's own examples operate on, so an
// operator written with gopf and one written with Kopf can be run against the
// same CRD and the same objects and their behaviour compared side by side.
// Like Kopf's CRD, the spec and status accept arbitrary fields; see
// KopfExampleSpec and KopfExampleStatus.
//
// +kubebuilder:object:generate=true
// +groupName=kopf.dev
package v1
