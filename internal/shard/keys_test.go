package shard

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAnObjectWithoutANameHasNoKey(t *testing.T) {
	_, err := ObjectKey(gk("apps", "Deployment"), &metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"})
	if !errors.Is(err, ErrGenerateName) {
		t.Errorf("key of an object with only a generateName: %v, want ErrGenerateName", err)
	}
	_, err = ObjectKey(gk("apps", "Deployment"), &metav1.ObjectMeta{Namespace: "ns"})
	if err == nil || errors.Is(err, ErrGenerateName) || !strings.Contains(err.Error(), "name is empty") {
		t.Errorf("key of an object without a name: %v, want an error saying so", err)
	}
	_, err = ObjectKey(gk("apps", ""), &metav1.ObjectMeta{Namespace: "ns", Name: "web"})
	if err == nil || !strings.Contains(err.Error(), "kind is empty") {
		t.Errorf("key with an empty kind: %v, want an error saying so", err)
	}
}

func TestTheKeyLeavesOutVersionAndUID(t *testing.T) {
	a, _ := ObjectKey(gk("apps", "Deployment"), &metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "1"})
	b, _ := ObjectKey(gk("apps", "Deployment"), &metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "2"})
	c, _ := ControllerKey(&metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{owner("apps/v1beta2", "Deployment", "web")}})
	if a != b || a != c {
		t.Errorf("keys %q, %q (another UID), %q (a child, another version) differ", a, b, c)
	}
}

func TestAnObjectWithoutAControllerHasNoControllerKey(t *testing.T) {
	notController := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", Controller: ptr.To(false)}
	for _, refs := range [][]metav1.OwnerReference{nil, {notController}} {
		_, err := ControllerKey(&metav1.ObjectMeta{Namespace: "ns", Name: "pod", OwnerReferences: refs})
		if !errors.Is(err, ErrNoController) {
			t.Errorf("ControllerKey with owners %v: %v, want ErrNoController", refs, err)
		}
	}
}

func TestAnIncompleteControllerReferenceIsAnError(t *testing.T) {
	for _, ref := range []metav1.OwnerReference{
		owner("", "Deployment", "web"),
		owner("apps/v1", "", "web"),
		owner("apps/v1", "Deployment", ""),
		owner("apps/v1/x", "Deployment", "web"),
	} {
		_, err := ControllerKey(&metav1.ObjectMeta{Namespace: "ns", Name: "pod", OwnerReferences: []metav1.OwnerReference{ref}})
		if err == nil || errors.Is(err, ErrNoController) {
			t.Errorf("ControllerKey with controller %v: %v, want an error about the reference", ref, err)
		}
	}
}
