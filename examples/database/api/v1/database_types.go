/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The database engines the operator can run.
const (
	EngineMySQL    = "mysql"
	EnginePostgres = "postgres"
)

// The condition types of a Database.
const (
	// ConditionAvailable is true while at least one replica is ready, so
	// the database accepts connections.
	ConditionAvailable = "Available"
	// ConditionReady is true when every requested replica is ready.
	ConditionReady = "Ready"
)

// DatabaseSpec is the desired state of a Database.
type DatabaseSpec struct {
	// Engine is the database engine.
	// +kubebuilder:validation:Enum=mysql;postgres
	Engine string `json:"engine"`

	// Version is the engine version, used as the image tag, e.g. "16".
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`

	// Storage is the size of each replica's volume, e.g. "10Gi".
	// +kubebuilder:validation:Pattern=`^[0-9]+(Mi|Gi|Ti)$`
	Storage string `json:"storage"`

	// Replicas is the number of database servers.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Backups turns the nightly backup CronJob on.
	// +optional
	Backups bool `json:"backups,omitempty"`
}

// DatabaseStatus is the observed state of a Database.
type DatabaseStatus struct {
	// ReadyReplicas is how many replicas of the StatefulSet are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Endpoint is the in-cluster address clients connect to.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Conditions are the Ready and Available conditions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Database is a database server managed by the database example operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=db
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Database struct {
	metav1.TypeMeta `json:",inline"`

	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec DatabaseSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status DatabaseStatus `json:"status,omitzero"`
}

// DatabaseList is a list of Database objects.
//
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`

	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the listed databases.
	Items []Database `json:"items"`
}

func init() {
	register(&Database{}, &DatabaseList{})
}
