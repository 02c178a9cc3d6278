// Command builtins handles built-in kinds, Pods and Services, as Kopf's
// 10-builtins example does. Built-in kinds have typed status that keeps no
// unknown fields, so handler results (and gopf's own state) have no room in
// their status: gopf keeps its state in annotations for them by itself, and
// these handlers return nothing and change the object through c.Patch
// instead.
//
//   - Pods labelled builtins.example.gopf.dev/ttl (e.g. "1h") get the
//     annotation builtins.example.gopf.dev/expires-at: creation time plus
//     the TTL. Other Pods are left alone entirely.
//   - Services get the annotation builtins.example.gopf.dev/ports, a summary
//     of spec.ports, kept up to date when the ports change.
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/handlers"
)

// The label and annotations this operator reads and writes.
const (
	ttlLabel          = "builtins.example.gopf.dev/ttl"
	expiresAnnotation = "builtins.example.gopf.dev/expires-at"
	portsAnnotation   = "builtins.example.gopf.dev/ports"
)

// +kubebuilder:rbac:groups="",resources=pods;services,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=pods/status;services/status,verbs=get;patch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

func main() {
	gopf.Main(registry()) // built-in kinds need no extra scheme
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, stampExpiry, handlers.Labels{ttlLabel: handlers.Present})
	handlers.OnField(reg, "spec.ports", summarisePorts)
	return reg
}

// stampExpiry annotates a Pod with the time its TTL runs out.
func stampExpiry(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
	ttl, err := time.ParseDuration(pod.Labels[ttlLabel])
	if err != nil {
		c.Warn("BadTTL", "label %s: %v", ttlLabel, err)
		return nil, handlers.Permanent(err)
	}
	expires := pod.CreationTimestamp.Add(ttl).UTC().Format(time.RFC3339)
	c.Patch.SetAnnotation(expiresAnnotation, &expires)
	return nil, nil
}

// summarisePorts annotates a Service with its ports, as name:port/protocol.
func summarisePorts(ctx context.Context, svc *corev1.Service, c *handlers.Cause) (any, error) {
	ports := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
	}
	summary := strings.Join(ports, ",")
	c.Patch.SetAnnotation(portsAnnotation, &summary)
	return nil, nil
}
