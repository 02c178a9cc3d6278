package envtest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxMessage bounds each handler message quoted in an error.
const maxMessage = 500

// describeProgress summarises the handler progress gopf stored on obj, for
// the error of a wait that timed out; "" when there is none. gopf keeps
// the progress of an unfinished cause in status.<field>.progress, or in the
// annotation <prefix>/progress (a JSON text) for kinds without a status:
// a map of handler id to a record of attempts, outcome and last message.
// The field and prefix are the operator's choice (default "gopf" and
// "gopf.dev"), so every status field and every annotation of that shape is
// looked at. The object is read as JSON, so any Go type works.
func describeProgress(obj client.Object) string {
	data, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return ""
	}
	var found []string
	status, _ := m["status"].(map[string]any)
	for _, field := range sortedKeys(status) {
		state, _ := status[field].(map[string]any)
		if text := describeRecords(state["progress"]); text != "" {
			found = append(found, fmt.Sprintf("gopf's progress in status.%s.progress:%s", field, text))
		}
	}
	meta, _ := m["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	for _, key := range sortedKeys(annotations) {
		if !strings.HasSuffix(key, "/progress") {
			continue
		}
		text, _ := annotations[key].(string)
		var records any
		if json.Unmarshal([]byte(text), &records) != nil {
			continue
		}
		if text := describeRecords(records); text != "" {
			found = append(found, fmt.Sprintf("gopf's progress in annotation %s:%s", key, text))
		}
	}
	return strings.Join(found, "; ")
}

// record is the part of a progress record that explains a wait.
type record struct {
	Retries int    `json:"retries"`
	Success bool   `json:"success"`
	Failure bool   `json:"failure"`
	Message string `json:"message"`
	Delayed string `json:"delayed"`
}

// describeRecords describes a map of progress records by handler id, a
// line per handler, or returns "" if raw is not one.
func describeRecords(raw any) string {
	byID, ok := raw.(map[string]any)
	if !ok || len(byID) == 0 {
		return ""
	}
	var out []string
	for _, id := range sortedKeys(byID) {
		fields, ok := byID[id].(map[string]any)
		if !ok {
			return "" // not gopf's progress
		}
		data, _ := json.Marshal(fields)
		var r record
		if json.Unmarshal(data, &r) != nil {
			return ""
		}
		out = append(out, "\n  "+describeRecord(id, r))
	}
	return strings.Join(out, "")
}

// describeRecord says where one handler stands.
func describeRecord(id string, r record) string {
	msg := r.Message
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	switch {
	case r.Success:
		return fmt.Sprintf("handler %q succeeded", id)
	case r.Failure:
		return fmt.Sprintf("handler %q failed for good after %s: %s", id, attempts(r.Retries), msg)
	case msg != "" && r.Delayed != "":
		return fmt.Sprintf("handler %q: %s failed so far, the next at %s; last error: %s", id, attempts(r.Retries), r.Delayed, msg)
	case msg != "":
		return fmt.Sprintf("handler %q: %s failed so far; last error: %s", id, attempts(r.Retries), msg)
	case r.Delayed != "":
		return fmt.Sprintf("handler %q is to run at %s", id, r.Delayed)
	default:
		return fmt.Sprintf("handler %q has not finished", id)
	}
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
