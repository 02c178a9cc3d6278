package calls

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// reset forgets the file of an earlier test, so that the next call opens
// the one EnvFile names now.
func reset(t *testing.T, path string) {
	t.Helper()
	t.Setenv(EnvFile, path)
	if file != nil {
		file.Close()
	}
	file, once = nil, sync.Once{}
}

func TestRecordedCallsReadBackInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls")
	reset(t, path)
	before := time.Now()
	Record("create", "kex-00001")
	Record("update", "")
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Cause != "create" || got[1].Cause != "update" {
		t.Fatalf("read %+v, want a create and an update call", got)
	}
	if got[0].Object != "kex-00001" || got[1].Object != "" || !got[0].End.IsZero() {
		t.Errorf("read %+v, want the object of the first call only and no ends", got)
	}
	if got[0].At.Before(before.Truncate(time.Nanosecond)) || got[1].At.Before(got[0].At) {
		t.Errorf("times %v, %v: want in order, after %v", got[0].At, got[1].At, before)
	}
}

func TestARunIsRecordedWithItsStartAndEndWhenItEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls")
	reset(t, path)
	end := Run("timer", "kex-00002")
	if got, _ := Read(path); len(got) != 0 {
		t.Fatalf("a run that has not ended was recorded: %+v", got)
	}
	time.Sleep(time.Millisecond)
	end()
	Run("timer", "kex-00003") // never ends: not recorded
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Cause != "timer" || got[0].Object != "kex-00002" {
		t.Fatalf("read %+v, want one timer call on kex-00002", got)
	}
	if got[0].End.Sub(got[0].At) < time.Millisecond {
		t.Errorf("start %v, end %v: want the end at least 1 ms after the start", got[0].At, got[0].End)
	}
}

func TestReadingNoFileGivesNoCalls(t *testing.T) {
	got, err := Read(filepath.Join(t.TempDir(), "none"))
	if err != nil || got != nil {
		t.Errorf("Read of a missing file = %v, %v; want no calls and no error", got, err)
	}
}

func TestReadingABadLineFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls")
	if err := os.WriteFile(path, []byte("soon create - 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Error("a line without a time was read")
	}
}

func TestEveryCallNamesTheReplicaThatMadeIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls")
	reset(t, path)
	t.Setenv(EnvReplica, "shard-1")
	Record("create", "kex-00004")
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Replica != "shard-1" {
		t.Fatalf("read %+v, want one call by replica shard-1", got)
	}
}

func TestLinesWithoutAReplicaStillRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls")
	if err := os.WriteFile(path, []byte("1 create kex-00005 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil || len(got) != 1 || got[0].Replica != "" || got[0].Object != "kex-00005" {
		t.Errorf("Read = %+v, %v; want one call with no replica", got, err)
	}
}
