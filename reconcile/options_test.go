package reconcile_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/state"
	"github.com/gopf-dev/gopf/reconcile"
)

// Setup hands every field of Options to the engine: a field added to one
// side only, or of another type, fails here rather than being ignored.
func TestEveryOptionReachesTheEngine(t *testing.T) {
	public := reconcile.Options{
		MaxConcurrentReconciles: 3, Prefix: "p.example.com", StatusField: "f", Storage: reconcile.StorageKopf,
		KopfPrefix: "k.example.com", KopfFinalizer: "k.example.com/f", DefaultBackoff: time.Second,
		LogEvents: reconcile.LogEventsInfo, EventsOff: true, EventComponent: "c", Memo: map[string]any{"a": 1},
		Namespaces: []string{"a"}, CleanupTimeout: 2 * time.Second, ProbeCache: 3 * time.Second,
		Peering:            &reconcile.PeeringOptions{Name: "n", Namespace: "ns", PerNamespace: true, Optional: true, Stealth: true, Priority: 1, Lifetime: time.Minute, Identity: "i"},
		ConsistencyTimeout: 4 * time.Second,
		Sharding:           &reconcile.Sharding{Ring: "r", Shard: "s", Namespace: "ns", LeaseDuration: time.Minute, KeepManagedFields: true, ExternalAssigner: true},
	}
	pv := reflect.ValueOf(public)
	for i := range pv.NumField() {
		if pv.Field(i).IsZero() {
			t.Fatalf("the test leaves Options.%s unset: set it", pv.Type().Field(i).Name)
		}
	}
	got := reflect.ValueOf(engine.OptionsFrom(public))
	if got.NumField() != pv.NumField() {
		t.Fatalf("engine.Options has %d fields, reconcile.Options %d", got.NumField(), pv.NumField())
	}
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		want := pv.FieldByName(name).Convert(got.Field(i).Type()).Interface()
		if !reflect.DeepEqual(got.Field(i).Interface(), want) {
			t.Errorf("engine's %s = %v, want %v", name, got.Field(i).Interface(), want)
		}
	}
	for _, nested := range []any{*public.Peering, *public.Sharding} {
		v := reflect.ValueOf(nested)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("the test leaves %s.%s unset: set it", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
}

// The defaults users read here are those the engine applies.
func TestKopfsDefaultsAreTheEngines(t *testing.T) {
	if reconcile.DefaultKopfPrefix != state.DefaultKopfPrefix || reconcile.DefaultKopfFinalizer != state.DefaultKopfFinalizer {
		t.Errorf("reconcile says %q and %q, the engine uses %q and %q",
			reconcile.DefaultKopfPrefix, reconcile.DefaultKopfFinalizer, state.DefaultKopfPrefix, state.DefaultKopfFinalizer)
	}
}
