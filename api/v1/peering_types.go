/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PeerStatus is one operator's entry in a peering object: operators of the
// same name announce themselves there, and the one with the highest
// priority handles objects while the others pause.
type PeerStatus struct {
	// Priority of the operator; the highest live priority works.
	Priority int `json:"priority"`
	// Lifetime is how many seconds after LastSeen the entry counts as live.
	Lifetime int `json:"lifetime"`
	// LastSeen is when the operator last renewed its entry (RFC 3339).
	LastSeen string `json:"lastseen"`
	// Paused is set by a gopf operator while it pauses for another peer.
	// Kopf ignores it (and does not write it).
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Busy is set by a paused gopf operator until the handlers it was
	// running when it paused have returned; a peer that paused it waits
	// for that before it handles objects. Kopf ignores it.
	// +optional
	Busy bool `json:"busy,omitempty"`
	// Message says why a freeze (the freeze command's --message) pauses
	// the operators. Kopf ignores it.
	// +optional
	Message string `json:"message,omitempty"`
	// Ring names the sharding ring of an operator whose replicas are its
	// shards: the shards of one ring share the work and do not pause for
	// one another. Kopf ignores it.
	// +optional
	Ring string `json:"ring,omitempty"`
}

// ClusterKopfPeering coordinates operators that watch the whole cluster.
// Its status maps operator identities to their PeerStatus; the same kind
// Kopf uses, so gopf and Kopf operators of one name can see each other.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
type ClusterKopfPeering struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status maps operator identities to their entries.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status map[string]PeerStatus `json:"status,omitempty"`
}

// ClusterKopfPeeringList is a list of ClusterKopfPeering.
//
// +kubebuilder:object:root=true
type ClusterKopfPeeringList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterKopfPeering `json:"items"`
}

// KopfPeering coordinates operators that watch one namespace; like
// ClusterKopfPeering, namespaced.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
type KopfPeering struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status maps operator identities to their entries.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status map[string]PeerStatus `json:"status,omitempty"`
}

// KopfPeeringList is a list of KopfPeering.
//
// +kubebuilder:object:root=true
type KopfPeeringList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KopfPeering `json:"items"`
}

func init() {
	register(&ClusterKopfPeering{}, &ClusterKopfPeeringList{}, &KopfPeering{}, &KopfPeeringList{})
}
