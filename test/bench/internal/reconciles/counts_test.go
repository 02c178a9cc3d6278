package reconciles

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCountsAtTakesTheLastReadingUpToTheMoment(t *testing.T) {
	t0 := time.Unix(100, 0)
	counts := []Counts{{At: t0, Total: 5, RequeueAfter: 1, QueueSeconds: 1}, {At: t0.Add(time.Second), Total: 9, Errors: 2, QueueSeconds: 3, Dequeued: 4}}
	if c := CountsAt(counts, t0.Add(-time.Nanosecond)); c.Total != 0 {
		t.Errorf("before the first reading: %+v, want none", c)
	}
	if c := CountsAt(counts, t0.Add(500*time.Millisecond)); c.Total != 5 || c.RequeueAfter != 1 {
		t.Errorf("between the readings: %+v, want the first", c)
	}
	c := CountsAt(counts, t0.Add(time.Hour)).Minus(CountsAt(counts, t0))
	if c.Total != 4 || c.Errors != 2 || c.RequeueAfter != -1 || c.QueueSeconds != 2 || c.Dequeued != 4 {
		t.Errorf("from the first to after the last: %+v, want 4 reconciles, 2 errors, -1 requeue-after", c)
	}
}

func TestCountsAddByResult(t *testing.T) {
	var c Counts
	for result, n := range map[string]int64{"success": 10, "requeue": 1, "requeue_after": 2, "error": 3} {
		c.add(result, n)
	}
	if c.Total != 16 || c.Requeue != 1 || c.RequeueAfter != 2 || c.Errors != 3 {
		t.Errorf("%+v, want 16 in all, 1 requeue, 2 requeue-after, 3 errors", c)
	}
}

func TestReadCountsParsesWhatIsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counts")
	if c, err := ReadCounts(path); err != nil || c != nil {
		t.Errorf("no file: %v, %v; want nothing", c, err)
	}
	if err := os.WriteFile(path, []byte("1000 7 1 2 3 0.5 0.25 9\n2000 8 1 2 4 0.75 0.5 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCounts(path)
	if err != nil || len(c) != 2 || c[1].Total != 8 || c[1].Errors != 4 || !c[0].At.Equal(time.Unix(0, 1000)) {
		t.Fatalf("got %+v, %v", c, err)
	}
	if c[1].ReconcileSeconds != 0.75 || c[1].QueueSeconds != 0.5 || c[1].Dequeued != 10 {
		t.Errorf("got %+v, %v", c, err)
	}
	if err := os.WriteFile(path, []byte("1000 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCounts(path); err == nil {
		t.Error("a malformed line: no error")
	}
}
