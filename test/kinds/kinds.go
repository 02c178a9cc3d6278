package kinds

import (
	"path/filepath"
	goruntime "runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// +kubebuilder:object:generate=true
// +groupName=kinds.test.gopf.dev
// +versionName=v1

var (
	// GroupVersion is the API group and version of the kinds.
	GroupVersion = schema.GroupVersion{Group: "kinds.test.gopf.dev", Version: "v1"}

	// SchemeBuilder collects the kinds for registration with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKinds)

	// AddToScheme registers the kinds with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKinds registers the kinds, and the metav1 types every group version
// serves (ListOptions, DeleteOptions, ...), under GroupVersion.
func addKinds(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{}, &ClusterWidget{}, &ClusterWidgetList{}, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// CRDDir is the folder of the kinds' CustomResourceDefinitions.
func CRDDir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "crd")
}

// WidgetSpec is what a Widget asks for.
type WidgetSpec struct {
	// Size is a number handlers may watch.
	// +optional
	Size int32 `json:"size,omitempty"`
	// Color is a string handlers may watch.
	// +optional
	Color string `json:"color,omitempty"`
}

// WidgetStatus is a typed status, as kubebuilder scaffolds it: fields it
// does not declare are pruned by the API server and dropped by the Go type.
type WidgetStatus struct {
	// Phase is a status field a controller would set.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Conditions are the usual conditions.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Widget is a namespaced kind with a status subresource and a typed status.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// ClusterWidget is a Widget without a namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type ClusterWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// ClusterWidgetList is a list of ClusterWidgets.
// +kubebuilder:object:root=true
type ClusterWidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterWidget `json:"items"`
}

// Gadget is a namespaced kind with a typed status and no status
// subresource: its status is written with the rest of the object.
// +kubebuilder:object:root=true
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// GadgetList is a list of Gadgets.
// +kubebuilder:object:root=true
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}
