/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "db.example.gopf.dev", Version: "v1"}

	// SchemeBuilder collects the types of this package for registration
	// with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addGroupVersion)

	// AddToScheme registers the types of this package with a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addGroupVersion registers the metav1 types every group version serves
// (ListOptions, DeleteOptions, ...) under GroupVersion.
func addGroupVersion(s *runtime.Scheme) error {
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// register adds objs to the types AddToScheme registers under GroupVersion;
// each types file calls it from init for its own kinds.
func register(objs ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objs...)
		return nil
	})
}
