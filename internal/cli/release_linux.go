package cli

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is Linux's MADV_PAGEOUT (5.4 and later): reclaim the pages of
// a range now, as memory pressure would.
const madvPageout = 21

// releaseBinaryPages asks the kernel to reclaim the pages of every
// read-only mapping of the running executable and returns how many bytes
// those mappings span. Writable mappings (the binary's data) are left
// alone: what was written there is the process's own memory.
func releaseBinaryPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := readOnlyMappingOf(sc.Text(), exe)
		if !ok {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPageout); errno != 0 {
			return total, fmt.Errorf("madvise(MADV_PAGEOUT): %w", errno)
		}
		total += int64(end - start)
	}
	return total, sc.Err()
}

// readOnlyMappingOf parses a line of /proc/self/maps ("start-end perms
// offset dev inode path") and says whether it maps path without write
// access.
func readOnlyMappingOf(line, path string) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) != 6 || fields[5] != path || strings.Contains(fields[1], "w") {
		return 0, 0, false
	}
	from, to, found := strings.Cut(fields[0], "-")
	s, err1 := strconv.ParseUint(from, 16, 64)
	e, err2 := strconv.ParseUint(to, 16, 64)
	if !found || err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
