// Package metrics defines gopf's Prometheus metrics and registers them with
// controller-runtime's registry, so that they are served with the
// manager's own. hack/dashboards reads the definitions here to generate the
// Grafana dashboard and the alerts.
package metrics
