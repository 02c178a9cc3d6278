package calls

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRecordedCallsReadBackInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls")
	t.Setenv(EnvFile, path)
	before := time.Now()
	Record("create")
	Record("update")
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Cause != "create" || got[1].Cause != "update" {
		t.Fatalf("read %+v, want a create and an update call", got)
	}
	if got[0].At.Before(before.Truncate(time.Nanosecond)) || got[1].At.Before(got[0].At) {
		t.Errorf("times %v, %v: want in order, after %v", got[0].At, got[1].At, before)
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
	if err := os.WriteFile(path, []byte("soon create\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Error("a line without a time was read")
	}
}
