package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// EnvHandlers names the environment variable that tells an operator how many
// handlers per cause to run (1 when unset).
const EnvHandlers = "GOPF_BENCH_HANDLERS"

// EnvWork names the environment variable that makes each create, update
// and delete handler of every tenth object (see Slow) take that long (a Go
// duration), returning early with its context's error if the context ends
// first, as a handler that calls out of the cluster does. Unset: the
// handlers return at once.
const EnvWork = "GOPF_BENCH_HANDLER_WORK"

// Slow reports whether the handlers of the object named take EnvWork's
// time: every tenth object, those whose name ends in 0, so that a stop
// finds long calls in flight while the phases still end in reasonable time.
func Slow(name string) bool { return strings.HasSuffix(name, "0") }

// Work returns the handlers' duration from EnvWork: 0 when unset, an error
// when it is not a duration of zero or more.
func Work() (time.Duration, error) {
	v := os.Getenv(EnvWork)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration of zero or more", EnvWork, v)
	}
	return d, nil
}

// Field values the load generator writes to spec.field.
const (
	// InitialField is spec.field of a new object.
	InitialField = "initial"
	// UpdatedField is spec.field after the update phase.
	UpdatedField = "updated"
)

// Handlers returns the handler count from EnvHandlers: 1 when unset, an
// error when it is not a positive number.
func Handlers() (int, error) {
	v := os.Getenv(EnvHandlers)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number", EnvHandlers, v)
	}
	return n, nil
}

// CreateKey is the status key of the i-th (from 0) of n create handlers:
// "create_fn" when there is one, as in Kopf's examples, else "create_fn_1"
// and on.
func CreateKey(i, n int) string { return key("create_fn", i, n) }

// UpdateKey is the status key of the i-th (from 0) of n update handlers.
func UpdateKey(i, n int) string { return key("update_fn", i, n) }

// DeleteID is the id of the i-th (from 0) of n delete handlers. Delete
// results are not stored: the object is going away.
func DeleteID(i, n int) string { return key("delete_fn", i, n) }

func key(base string, i, n int) string {
	if n == 1 {
		return base
	}
	return base + "_" + strconv.Itoa(i+1)
}

// CreateResult is the value a create handler stores.
func CreateResult() map[string]any {
	return map[string]any{"message": "created"}
}

// UpdateResult is the value an update handler stores for an object whose
// spec.field is field.
func UpdateResult(field string) map[string]any {
	return map[string]any{"message": "updated", "field": field}
}

// Created reports whether all n create results are on obj.
func Created(obj *kopfv1.KopfExample, n int) bool {
	for i := range n {
		if _, ok := obj.Status.Extra[CreateKey(i, n)]; !ok {
			return false
		}
	}
	return true
}

// Updated reports whether all n update results on obj are for spec.field
// UpdatedField.
func Updated(obj *kopfv1.KopfExample, n int) bool {
	for i := range n {
		raw, ok := obj.Status.Extra[UpdateKey(i, n)]
		if !ok {
			return false
		}
		var res struct {
			Field string `json:"field"`
		}
		if json.Unmarshal(raw.Raw, &res) != nil || res.Field != UpdatedField {
			return false
		}
	}
	return true
}
