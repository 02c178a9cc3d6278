package cli

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
)

func TestReadOnlyMappingsOfTheBinaryAreTheOnesReleased(t *testing.T) {
	const exe = "/usr/bin/op"
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"00400000-01a00000 r-xp 00000000 08:01 123 /usr/bin/op", true},
		{"01a00000-02f00000 r--p 01600000 08:01 123 /usr/bin/op", true},
		{"02f00000-02f80000 rw-p 02b00000 08:01 123 /usr/bin/op", false}, // its data
		{"7f0000000000-7f0000100000 r-xp 00000000 08:01 9 /lib/libc.so", false},
		{"c000000000-c004000000 rw-p 00000000 00:00 0", false}, // the heap
		{"00400000-00400000 r-xp 00000000 08:01 123 /usr/bin/op", false},
		{"zz-01a00000 r-xp 00000000 08:01 123 /usr/bin/op", false},
	} {
		start, end, ok := readOnlyMappingOf(tc.line, exe)
		if ok != tc.ok || (ok && end <= start) {
			t.Errorf("%q: %x-%x %v, want %v", tc.line, start, end, ok, tc.ok)
		}
	}
}

func TestTheBinarysPagesAreReleasedOnceTheCachesSynced(t *testing.T) {
	var released int
	r := pageRelease{cache: &informertest.FakeInformers{Synced: new(true)}, settle: 0, log: logr.Discard(),
		release: func() (int64, error) { released++; return 1 << 20, nil }}
	if err := r.Start(context.Background()); err != nil || released != 1 {
		t.Fatalf("Start = %v, released %d times; want nil and once", err, released)
	}

	r.cache = &informertest.FakeInformers{Synced: new(false)}
	if err := r.Start(context.Background()); err != nil || released != 1 {
		t.Fatalf("Start with caches that never synced = %v, released %d times; want nil and no release", err, released)
	}

	r.cache = &informertest.FakeInformers{Synced: new(true)}
	r.release = func() (int64, error) { return 0, errors.New("no") }
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("a failed release stops the manager: %v", err)
	}
}

func TestTheRunningBinarysPagesCanBeReleased(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MADV_PAGEOUT is Linux's")
	}
	before := residentFileKiB(t)
	n, err := releaseBinaryPages()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no mapping of the test binary was found")
	}
	if after := residentFileKiB(t); after >= before {
		t.Errorf("file-backed resident memory %d KiB after the release, %d KiB before; want less", after, before)
	}
}

// residentFileKiB is the process's file-backed resident memory.
func residentFileKiB(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var kib int64
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kib, err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return kib
}
