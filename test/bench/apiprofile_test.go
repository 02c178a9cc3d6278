//go:build linux

package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile is a profile of one function with samples CPU samples.
func cpuProfile(t *testing.T, samples int64) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "handle"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{samples}}},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     1,
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAPIServerProfilesOfAPhaseAreMergedAndTheBusyProfilerIsWaitedFor(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch asked.Add(1) {
		case 1: // the chunk cut short at the end of the previous phase
			http.Error(w, "Could not enable CPU profiling: "+errProfilerBusy, http.StatusInternalServerError)
		case 2:
			_, _ = w.Write(cpuProfile(t, 3))
		case 3:
			_, _ = w.Write(cpuProfile(t, 4))
		default: // the phase ends during this chunk
			cancel()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "apiserver-create.pprof")
	if err := collectProfiles(ctx, srv.Client(), srv.URL, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[0]
	}
	if sum != 7 {
		t.Errorf("the merged profile has %d samples, want 3+4", sum)
	}
}

func TestAPIServerProfileErrorsOtherThanBusyAreReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "apiserver-create.pprof")
	if err := collectProfiles(t.Context(), srv.Client(), srv.URL, path); err == nil {
		t.Fatal("a refused profile was not reported")
	}
}
