//go:build linux

package bench

import (
	"fmt"
	"math"
	"strings"
)

// table is a grid of cells printed as aligned text or as Markdown.
type table struct {
	header []string
	rows   [][]string
	align  string // per column: 'l' left, anything else right
}

func (t *table) leftAligned(i int) bool { return i < len(t.align) && t.align[i] == 'l' }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// textIndent starts every line of a table printed as text.
const textIndent = "  "

// text renders the table with aligned columns, each line indented by
// textIndent.
func (t *table) text() string {
	widths := make([]int, len(t.header))
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, row := range append([][]string{t.header}, t.rows...) {
		b.WriteString(textIndent)
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.leftAligned(i) {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		b.WriteString("\n")
	}
	lines := strings.Split(b.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// markdown renders the table in GitHub's Markdown.
func (t *table) markdown() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.header, " | ") + " |\n|")
	for i := range t.header {
		if t.leftAligned(i) {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, row := range t.rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

// Number formats.
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// ratioString formats a target's ratio with two decimals, or three when two
// would print the limit itself for a ratio just above it (or "–" when
// there is no ratio).
func ratioString(t TargetResult) string {
	r := t.Ratio
	if r == nil || math.IsInf(*r, 0) || math.IsNaN(*r) {
		return "–"
	}
	s := fmt.Sprintf("%.2f", *r)
	if !t.Pass && s == fmt.Sprintf("%.2f", t.MaxRatio) {
		s = fmt.Sprintf("%.3f", *r)
	}
	return s + "×"
}

func passString(pass bool) string {
	if pass {
		return "pass"
	}
	return "miss"
}

// figure formats a target's figure with the precision its metric needs.
func figure(metric string, v float64) string {
	switch metric {
	case MetricWrites, MetricHandlerCalls:
		return fmt.Sprintf("%.0f", v)
	case MetricPeakRSS, MetricCPUPerTick:
		return f1(v)
	}
	return f2(v)
}
