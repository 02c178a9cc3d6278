//go:build linux

package bench

import "fmt"

// memSplit is a process's resident memory, split by what backs it.
type memSplit struct {
	// AnonKiB is anonymous memory: the Go heap, goroutine stacks and the
	// runtime's own structures.
	AnonKiB int64 `json:"anonKiB"`
	// FileKiB is file-backed memory: the pages of the binary (its code,
	// read-only data and symbol tables) and of the shared libraries that
	// the process has touched.
	FileKiB int64 `json:"fileKiB"`
}

// residentSplit reads a process's resident memory now, anonymous and
// file-backed, from /proc/<pid>/smaps_rollup (Linux 4.14 and later).
func residentSplit(pid int) (memSplit, error) {
	path := fmt.Sprintf("/proc/%d/smaps_rollup", pid)
	rss, err := procStatusField(path, "Rss:")
	if err != nil {
		return memSplit{}, err
	}
	anon, err := procStatusField(path, "Anonymous:")
	if err != nil {
		return memSplit{}, err
	}
	return memSplit{AnonKiB: anon, FileKiB: rss - anon}, nil
}
