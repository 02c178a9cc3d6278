package engine

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/gopf-dev/gopf/internal/logs"
	"github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/internal/state"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Storage is reconcile.Storage: where gopf keeps its per-object state.
type Storage int

// The values of reconcile.Storage.
const (
	StorageAuto Storage = iota
	StorageStatus
	StorageAnnotations
	StorageKopf
)

// Options are reconcile.Options, field for field (OptionsFrom copies
// them), with the defaults applied by withDefaults.
type Options struct {
	MaxConcurrentReconciles int
	Prefix                  string
	StatusField             string
	Storage                 Storage
	KopfPrefix              string
	KopfFinalizer           string
	DefaultBackoff          time.Duration
	LogEvents               logs.Posting
	EventsOff               bool
	EventComponent          string
	Memo                    map[string]any
	Namespaces              []string
	CleanupTimeout          time.Duration
	ProbeCache              time.Duration
	Peering                 *peering.Options
	Sharding                *shard.Sharding
	ConsistencyTimeout      time.Duration
}

// OptionsFrom copies public, a struct with the fields of Options under the
// same names and of convertible types (reconcile.Options), into Options. A
// field missing from public panics: reconcile's tests copy a full Options.
func OptionsFrom(public any) Options {
	var o Options
	src := reflect.ValueOf(public)
	dst := reflect.ValueOf(&o).Elem()
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		dst.Field(i).Set(src.FieldByName(f.Name).Convert(f.Type))
	}
	return o
}

func (o Options) WithDefaults() Options {
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 16
	}
	if o.Prefix == "" {
		o.Prefix = "gopf.dev"
	}
	if o.StatusField == "" {
		o.StatusField = "gopf"
	}
	if o.KopfPrefix == "" {
		o.KopfPrefix = state.DefaultKopfPrefix
	}
	if o.KopfFinalizer == "" {
		o.KopfFinalizer = state.DefaultKopfFinalizer
	}
	if o.DefaultBackoff <= 0 {
		o.DefaultBackoff = 60 * time.Second
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = 30 * time.Second
	}
	if o.ProbeCache <= 0 {
		o.ProbeCache = 10 * time.Second
	}
	if o.ConsistencyTimeout <= 0 {
		o.ConsistencyTimeout = 5 * time.Second
	}
	if o.EventComponent == "" {
		o.EventComponent = "gopf"
	}
	return o
}

// Validate checks the options Setup cannot default.
func (o Options) Validate() error {
	if problems := validation.IsQualifiedName(o.EventComponent); len(problems) > 0 {
		return fmt.Errorf("gopf: EventComponent %q is not a valid reporting component: %s", o.EventComponent, strings.Join(problems, "; "))
	}
	if o.Peering != nil {
		return o.Peering.Validate()
	}
	return nil
}
