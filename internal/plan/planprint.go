package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// View says which columns a StatusPrinter's table has.
type View int

const (
	// ViewStatus shows where the handlers stand and the finalizers.
	ViewStatus View = iota
	// ViewPlan shows what an operator would do on start.
	ViewPlan
)

// StatusPrinter writes object statuses as they arrive, in one of three
// forms: "table" (the default; a line per object, aligned in blocks of
// tableBlock lines so that long lists stream), "json" (one document, an
// ObjectStatusList whose items are written one by one) or "yaml" (the same
// document in YAML). The json and yaml forms carry every field of
// ObjectStatus, in a list of apiVersion StatusAPIVersion. The table of a
// sharded operator (its planner knows the ring) has a SHARD column.
type StatusPrinter struct {
	w      io.Writer
	format string
	view   View
	tw     *tabwriter.Writer
	n      int // objects printed
	// shards adds a SHARD column to the table: the operator is sharded.
	shards bool
}

// tableBlock is how many table lines are aligned together before they are
// written out.
const tableBlock = 100

// maxCellMessage bounds each message quoted in a table cell.
const maxCellMessage = 60

// The forms a StatusPrinter prints.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// NewStatusPrinter returns a printer of the given form ("", "table", "json"
// or "yaml") to w. Call Close after the last object.
func NewStatusPrinter(w io.Writer, format string, view View) (*StatusPrinter, error) {
	switch format {
	case "", formatTable:
		format = formatTable
	case formatJSON, formatYAML:
	default:
		return nil, fmt.Errorf("the output format is table, json or yaml, not %q", format)
	}
	return &StatusPrinter{w: w, format: format, view: view, tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}, nil
}

// Print writes one object's status.
func (p *StatusPrinter) Print(st *ObjectStatus) error {
	p.n++
	switch p.format {
	case formatJSON:
		data, err := json.MarshalIndent(st, "    ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n    "
		if p.n == 1 {
			sep = fmt.Sprintf("{\n  \"apiVersion\": %q,\n  \"kind\": \"ObjectStatusList\",\n  \"items\": [\n    ", StatusAPIVersion)
		}
		_, err = fmt.Fprintf(p.w, "%s%s", sep, data)
		return err
	case formatYAML:
		data, err := yaml.Marshal(st)
		if err != nil {
			return err
		}
		if p.n == 1 {
			if _, err := fmt.Fprintf(p.w, "apiVersion: %s\nkind: ObjectStatusList\nitems:\n", StatusAPIVersion); err != nil {
				return err
			}
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		for i := range lines {
			lines[i] = "  " + lines[i]
		}
		lines[0] = "- " + strings.TrimPrefix(lines[0], "  ")
		_, err = fmt.Fprintln(p.w, strings.Join(lines, "\n"))
		return err
	}
	if p.n == 1 {
		header := "KIND\tNAMESPACE\tNAME\tSTATE\tHANDLERS\tFINALIZERS"
		if p.view == ViewPlan {
			header = "KIND\tNAMESPACE\tNAME\tSTATE\tON START"
		}
		if p.shards {
			header = strings.Replace(header, "\tSTATE\t", "\tSHARD\tSTATE\t", 1)
		}
		if _, err := fmt.Fprintln(p.tw, header); err != nil {
			return err
		}
	}
	ns := st.Namespace
	if ns == "" {
		ns = "-"
	}
	cells := []string{st.Kind, ns, st.Name}
	if p.shards {
		cells = append(cells, shardCell(st.Shard))
	}
	cells = append(cells, st.State)
	if p.view == ViewPlan {
		cells = append(cells, joinCell(st.OnStart, func(a Action) string { return a.Text }, "; "))
	} else {
		cells = append(cells, handlersCell(st), joinCell(st.Finalizers, func(f FinalizerStatus) string { return f.Name }, ","))
	}
	if _, err := fmt.Fprintln(p.tw, strings.Join(cells, "\t")); err != nil {
		return err
	}
	if p.n%tableBlock == 0 {
		return p.tw.Flush()
	}
	return nil
}

// Close ends the output: it writes what is buffered and closes the
// document (an empty list when nothing was printed; a table with no rows
// prints nothing).
func (p *StatusPrinter) Close() error {
	switch p.format {
	case formatJSON:
		var err error
		if p.n == 0 {
			_, err = fmt.Fprintf(p.w, "{\n  \"apiVersion\": %q,\n  \"kind\": \"ObjectStatusList\",\n  \"items\": []\n}\n", StatusAPIVersion)
		} else {
			_, err = fmt.Fprint(p.w, "\n  ]\n}\n")
		}
		return err
	case formatYAML:
		if p.n == 0 {
			_, err := fmt.Fprintf(p.w, "apiVersion: %s\nkind: ObjectStatusList\nitems: []\n", StatusAPIVersion)
			return err
		}
		return nil
	}
	return p.tw.Flush()
}

// Printed reports how many objects were printed.
func (p *StatusPrinter) Printed() int { return p.n }

// handlersCell describes the handlers in one cell: those with something
// to say one by one, the done and idle ones by name.
func handlersCell(st *ObjectStatus) string {
	var parts, done, idle []string
	for _, h := range st.Handlers {
		switch h.State {
		case HandlerDone:
			done = append(done, h.ID)
		case HandlerIdle:
			idle = append(idle, h.ID)
		default:
			// The engine's messages name the handler and the object, which
			// the line names already.
			h.Message = strings.TrimPrefix(h.Message, fmt.Sprintf("handler %q on %s %s/%s: ", h.ID, st.Kind, st.Namespace, st.Name))
			parts = append(parts, describeHandler(h))
		}
	}
	if len(done) > 0 {
		parts = append(parts, "done: "+strings.Join(done, ","))
	}
	if len(idle) > 0 {
		parts = append(parts, "idle: "+strings.Join(idle, ","))
	}
	if st.StateError != "" {
		parts = append(parts, "unreadable state: "+short(st.StateError))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// describeHandler says where one handler stands, e.g. `flaky_fn retrying
// (retry 2 of 4, next at 2026-01-02T03:04:05Z): "boom"`.
func describeHandler(h HandlerStatus) string {
	text := h.ID + " " + string(h.State)
	var details []string
	if h.State == HandlerRetrying {
		retry := fmt.Sprintf("retry %d", h.Attempts)
		if h.MaxAttempts > 0 {
			retry += fmt.Sprintf(" of %d", h.MaxAttempts-1)
		}
		details = append(details, retry)
		if h.NextAttempt != nil {
			details = append(details, "next at "+h.NextAttempt.UTC().Format(time.RFC3339))
		} else {
			details = append(details, "due now")
		}
	}
	if h.Operator != "" {
		details = append(details, "on "+h.Operator)
	}
	if h.State == HandlerFailed && h.Since != nil {
		details = append(details, "at "+h.Since.UTC().Format(time.RFC3339))
	}
	if len(details) > 0 {
		text += " (" + strings.Join(details, ", ") + ")"
	}
	if h.Message != "" && (h.State == HandlerRetrying || h.State == HandlerFailed) {
		text += fmt.Sprintf(": %q", short(h.Message))
	}
	return text
}

// joinCell joins the texts of items into a cell, "-" for none.
func joinCell[T any](items []T, text func(T) string, sep string) string {
	if len(items) == 0 {
		return "-"
	}
	texts := make([]string, len(items))
	for i, item := range items {
		texts[i] = text(item)
	}
	return strings.Join(texts, sep)
}

// short shortens a message for a table cell, on one line.
func short(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > maxCellMessage {
		return string(r[:maxCellMessage-1]) + "…"
	}
	return msg
}

// Print streams the statuses of the objects sel selects to w in the given
// form (see StatusPrinter), each object as soon as its page is listed; it
// reports how many objects it printed. On an error, what was printed is
// closed into a readable document.
func (p *Planner) Print(ctx context.Context, w io.Writer, sel Selection, format string, view View) (int, error) {
	printer, err := NewStatusPrinter(w, format, view)
	if err != nil {
		return 0, err
	}
	printer.shards = p.opts.Sharding != nil
	if err := p.Plan(ctx, sel, printer.Print); err != nil {
		_ = printer.Close()
		return printer.Printed(), err
	}
	return printer.Printed(), printer.Close()
}
