// Command dashboards writes gopf's Grafana dashboard
// (config/grafana/gopf-metrics.json, in the form of kubebuilder's grafana
// plugin) and its PrometheusRule (config/prometheus/gopf-alerts.yaml) from
// the metric definitions in package reconcile, which it reads as source:
// a panel per metric, and alerts that name only metrics and labels that
// exist. `make grafana` runs it; its test fails when the files are not
// what the definitions produce, so a renamed metric cannot leave a dead
// panel or alert behind.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// metric is one metric definition found in the source.
type metric struct {
	Name   string
	Help   string
	Type   string // counter, gauge, histogram, summary
	Labels []string
}

func main() {
	src := flag.String("src", "internal/metrics", "The package folder whose metric definitions to read.")
	out := flag.String("out", ".", "The repository root to write config/grafana and config/prometheus under.")
	flag.Parse()
	files, err := generate(*src)
	if err == nil {
		for name, data := range files {
			path := filepath.Join(*out, name)
			if err = os.WriteFile(path, data, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

// Output files, relative to the repository root.
const (
	dashboardFile = "config/grafana/gopf-metrics.json"
	alertsFile    = "config/prometheus/gopf-alerts.yaml"
)

// generate returns the dashboard and the rules, by path, for the metrics
// defined in the Go files of dir.
func generate(dir string) (map[string][]byte, error) {
	metrics, err := readMetrics(dir)
	if err != nil {
		return nil, err
	}
	if len(metrics) == 0 {
		return nil, fmt.Errorf("no metric definitions found in %s", dir)
	}
	var dashboard bytes.Buffer
	enc := json.NewEncoder(&dashboard)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(dashboardOf(metrics)); err != nil {
		return nil, err
	}
	alerts, err := alertsOf(metrics)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{dashboardFile: dashboard.Bytes(), alertsFile: alerts}, nil
}

// readMetrics finds every prometheus.New<Type>[Vec](prometheus.<Type>Opts{
// Name: ..., Help: ...}[, []string{labels...}]) in the non-test Go files of
// dir, in the order of the source.
func readMetrics(dir string) ([]metric, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []metric
	var errs []error
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if pkg, isIdent := selX(sel); !ok || !isIdent || pkg != "prometheus" || !strings.HasPrefix(sel.Sel.Name, "New") {
				return true
			}
			typ := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(sel.Sel.Name, "New"), "Vec"))
			if !slices.Contains([]string{typeCounter, "gauge", typeHistogram, "summary"}, typ) || len(call.Args) == 0 {
				return true
			}
			m, err := readMetric(call, typ)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", fset.Position(call.Pos()), err))
				return true
			}
			out = append(out, m)
			return true
		})
	}
	return out, errors.Join(errs...)
}

func selX(sel *ast.SelectorExpr) (string, bool) {
	if sel == nil {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

func readMetric(call *ast.CallExpr, typ string) (metric, error) {
	m := metric{Type: typ}
	opts, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return m, errors.New("the options are not a literal")
	}
	for _, e := range opts.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil || key.Name != "Name" && key.Name != "Help" {
			continue
		}
		text, err := stringLit(kv.Value)
		if err != nil {
			return m, fmt.Errorf("%s: %w", key.Name, err)
		}
		if key.Name == "Name" {
			m.Name = text
		} else {
			m.Help = text
		}
	}
	if m.Name == "" {
		return m, errors.New("a metric without a literal Name")
	}
	if len(call.Args) > 1 {
		labels, ok := call.Args[1].(*ast.CompositeLit)
		if !ok {
			return m, fmt.Errorf("%s: the labels are not a literal", m.Name)
		}
		for _, e := range labels.Elts {
			label, err := stringLit(e)
			if err != nil {
				return m, fmt.Errorf("%s: %w", m.Name, err)
			}
			m.Labels = append(m.Labels, label)
		}
	}
	return m, nil
}

func stringLit(e ast.Expr) (string, error) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", errors.New("not a string literal")
	}
	return strconv.Unquote(lit.Value)
}

// selector is the label matcher every query carries: the dashboard's job
// and namespace variables.
const selector = `job="$job", namespace="$namespace"`

// The Prometheus data source of the dashboard: Grafana asks for it on import
// (the DS_PROMETHEUS input) and every panel and variable queries it.
const (
	datasource       = "${DS_PROMETHEUS}"
	prometheusPlugin = "prometheus"
	prometheusName   = "Prometheus"
)

// The metric types, as readMetric reads them off the prometheus.New...
// constructors, that the panels query differently from a gauge.
const (
	typeCounter   = "counter"
	typeHistogram = "histogram"
)

// dashboardOf builds the dashboard: a time series panel per metric, two
// per row, in the order of the definitions.
func dashboardOf(metrics []metric) map[string]any {
	panels := make([]any, 0, len(metrics))
	for i, m := range metrics {
		legend := make([]string, len(m.Labels))
		for j, l := range m.Labels {
			legend[j] = "{{" + l + "}}"
		}
		by := strings.Join(m.Labels, ", ")
		var targets []any
		switch m.Type {
		case typeCounter:
			targets = append(targets, target("A", fmt.Sprintf("sum by (%s) (rate(%s{%s}[5m]))", by, m.Name, selector), strings.Join(legend, " ")))
		case typeHistogram:
			for j, q := range []string{"0.5", "0.95", "0.99"} {
				expr := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s_bucket{%s}[5m])))", q, strings.Join(append([]string{"le"}, m.Labels...), ", "), m.Name, selector)
				targets = append(targets, target(string(rune('A'+j)), expr, "p"+strings.TrimPrefix(q, "0.")+" "+strings.Join(legend, " ")))
			}
		default:
			targets = append(targets, target("A", fmt.Sprintf("sum by (%s) (%s{%s})", by, m.Name, selector), strings.Join(legend, " ")))
		}
		unit := "short"
		switch {
		case strings.HasSuffix(m.Name, "_seconds"):
			unit = "s"
		case m.Type == typeCounter:
			unit = "ops"
		}
		panels = append(panels, map[string]any{
			"datasource":  datasource,
			"description": m.Help + " (" + m.Name + ")",
			"fieldConfig": map[string]any{
				"defaults": map[string]any{
					"color":  map[string]any{"mode": "palette-classic"},
					"custom": map[string]any{"drawStyle": "line", "fillOpacity": 10, "lineWidth": 1, "showPoints": "never", "spanNulls": false},
					"unit":   unit,
				},
				"overrides": []any{},
			},
			"gridPos": map[string]any{"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i / 2)},
			"id":      i + 1,
			"options": map[string]any{
				"legend":  map[string]any{"calcs": []any{}, "displayMode": "list", "placement": "bottom", "showLegend": true},
				"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
			},
			"targets": targets,
			"title":   strings.TrimSuffix(m.Help, "."),
			"type":    "timeseries",
		})
	}
	variable := func(name, query string) map[string]any {
		return map[string]any{
			"datasource": datasource, "definition": query, "hide": 0, "includeAll": false, "multi": false,
			"name": name, "options": []any{}, "query": map[string]any{"query": query, "refId": "StandardVariableQuery"},
			"refresh": 1, "regex": "", "skipUrlSync": false, "sort": 0, "type": "query",
		}
	}
	first := metrics[0].Name
	if metrics[0].Type == typeHistogram {
		first += "_count"
	}
	return map[string]any{
		"__inputs": []any{map[string]any{
			"name": "DS_PROMETHEUS", "label": prometheusName, "description": "",
			"type": "datasource", "pluginId": prometheusPlugin, "pluginName": prometheusName,
		}},
		"__requires": []any{map[string]any{"type": "datasource", "id": prometheusPlugin, "name": prometheusName, "version": "1.0.0"}},
		"annotations": map[string]any{"list": []any{map[string]any{
			"builtIn": 1, "datasource": "-- Grafana --", "enable": true, "hide": true, "iconColor": "rgba(0, 211, 255, 1)",
			"name": "Annotations & Alerts", "type": "dashboard",
		}}},
		"description":          "gopf handlers: calls by outcome, durations, causes, daemons, timer lateness, peering. Generated by hack/dashboards from the metric definitions; do not edit.",
		"editable":             true,
		"fiscalYearStartMonth": 0,
		"graphTooltip":         1,
		"links":                []any{},
		"liveNow":              false,
		"panels":               panels,
		"refresh":              "30s",
		"schemaVersion":        39,
		"style":                "dark",
		"tags":                 []any{"gopf"},
		"templating": map[string]any{"list": []any{
			variable("namespace", "label_values("+first+", namespace)"),
			variable("job", `label_values(`+first+`{namespace="$namespace"}, job)`),
		}},
		"time":       map[string]any{"from": "now-1h", "to": "now"},
		"timepicker": map[string]any{},
		"timezone":   "",
		"title":      "gopf Handlers",
		"uid":        "gopf-handlers",
		"version":    1,
		"weekStart":  "",
	}
}

// alert is one alerting rule. The metrics and labels its expression names
// must be defined.
type alert struct {
	name, expr, duration, severity, summary, description string
}

// alerts are gopf's alerting rules: handlers stuck in retries, handlers
// that fail for good, an operator paused by peering for long.
var alerts = []alert{
	{
		name:     "GopfHandlerStuckInRetries",
		expr:     `sum by (namespace, controller, handler) (increase(gopf_handler_calls_total{outcome="retry"}[30m])) > 0 unless sum by (namespace, controller, handler) (increase(gopf_handler_calls_total{outcome="success"}[30m])) > 0`,
		duration: "30m",
		severity: "warning",
		summary:  "gopf handler {{ $labels.handler }} of {{ $labels.controller }} keeps retrying",
		description: "Handler {{ $labels.handler }} of {{ $labels.controller }} in {{ $labels.namespace }} has been retried for 30 minutes without a single success. " +
			"`<operator> status` (or `kubectl gopf status KIND -A`) shows the objects, the retry counts and the last errors.",
	},
	{
		name:     "GopfHandlerFailedPermanently",
		expr:     `sum by (namespace, controller, handler) (increase(gopf_handler_calls_total{outcome="failure"}[15m])) > 0`,
		duration: "0m",
		severity: "warning",
		summary:  "gopf handler {{ $labels.handler }} of {{ $labels.controller }} failed permanently",
		description: "Handler {{ $labels.handler }} of {{ $labels.controller }} in {{ $labels.namespace }} failed for good {{ $value }} times in 15 minutes: gopf will not call it again for those changes. " +
			"The HandlerFailed Warning Events on the objects carry the errors.",
	},
	{
		name:        "GopfOperatorPausedByPeering",
		expr:        `max by (namespace, job, peering) (gopf_peering_paused) == 1`,
		duration:    "1h",
		severity:    "info",
		summary:     "a gopf operator has been paused by peering {{ $labels.peering }} for an hour",
		description: "Operator {{ $labels.job }} in {{ $labels.namespace }} has handled nothing for an hour: a peer with a higher or equal priority is alive in peering {{ $labels.peering }} (a freeze, a development run, or two operators with the same priority).",
	},
}

// scrapeLabels are added by Prometheus, not defined with the metrics.
var scrapeLabels = []string{"namespace", "job", "instance", "pod", "service"}

// alertsOf renders the PrometheusRule, after checking that each alert's
// metric and labels are defined.
func alertsOf(metrics []metric) ([]byte, error) {
	byName := map[string]metric{}
	for _, m := range metrics {
		byName[m.Name] = m
	}
	var b bytes.Buffer
	b.WriteString(`# gopf's alerts, for the Prometheus Operator. Generated by hack/dashboards
# from the metric definitions in internal/metrics/ (make grafana); do not edit.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  labels:
    app.kubernetes.io/name: gopf
    app.kubernetes.io/managed-by: kustomize
  name: gopf-alerts
  namespace: system
spec:
  groups:
  - name: gopf-handlers
    rules:
`)
	for _, a := range alerts {
		if err := checkExpr(a.expr, byName); err != nil {
			return nil, fmt.Errorf("alert %s: %w", a.name, err)
		}
		fmt.Fprintf(&b, "    - alert: %s\n      expr: %s\n", a.name, quote(a.expr))
		if a.duration != "0m" {
			fmt.Fprintf(&b, "      for: %s\n", a.duration)
		}
		fmt.Fprintf(&b, "      labels:\n        severity: %s\n      annotations:\n        summary: %s\n        description: %s\n", a.severity, quote(a.summary), quote(a.description))
	}
	return b.Bytes(), nil
}

var (
	metricName = regexp.MustCompile(`\bgopf_[a-z0-9_]+`)
	grouping   = regexp.MustCompile(`\bby \(([^)]*)\)`)
	matcher    = regexp.MustCompile(`(\w+)\s*(?:=|!=|=~|!~)\s*"`)
)

// checkExpr reports metrics an expression names that are not defined, and
// labels it groups or matches by that none of its metrics has.
func checkExpr(expr string, byName map[string]metric) error {
	labels := slices.Clone(scrapeLabels)
	for _, name := range metricName.FindAllString(expr, -1) {
		m, ok := byName[name]
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, cut := strings.CutSuffix(name, suffix); !ok && cut {
				m, ok = byName[base]
			}
		}
		if !ok {
			return fmt.Errorf("no metric %s is defined", name)
		}
		labels = append(labels, m.Labels...)
	}
	var used []string
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			used = append(used, strings.TrimSpace(l))
		}
	}
	for _, mt := range matcher.FindAllStringSubmatch(expr, -1) {
		used = append(used, mt[1])
	}
	for _, l := range used {
		if l != "" && l != "le" && !slices.Contains(labels, l) {
			return fmt.Errorf("no metric it names has a label %q", l)
		}
	}
	return nil
}

// target is one query of a panel.
func target(refID, expr, legend string) map[string]any {
	return map[string]any{"datasource": datasource, "exemplar": true, "expr": expr, "interval": "", "legendFormat": legend, "refId": refID}
}

// quote writes a YAML double-quoted scalar (JSON strings are valid YAML).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
