//go:build linux

package bench

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of CPU times in /proc/<pid>/stat (USER_HZ), which
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuTime returns the user plus system CPU time process pid has used so far.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// fields are counted after it: state is field 3, utime 14, stime 15.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// peakRSS returns the peak resident set size of process pid so far in KiB
// (VmHWM).
func peakRSS(pid int) (int64, error) {
	return procStatusField(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
}

// procStatusField reads a "Name:   123 kB" line of a /proc status-like file.
func procStatusField(path, name string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				break
			}
			return strconv.ParseInt(fields[0], 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no %s line", path, name)
}

// childPIDs returns the processes named (by their command name) one of
// names whose parent is this process, by name; a name none has is
// missing from the map.
func childPIDs(names ...string) (map[string]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	found := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone since the listing
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		s := string(data)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(self) {
			continue
		}
		if comm := s[open+1 : closing]; slices.Contains(names, comm) {
			found[comm] = pid
		}
	}
	return found, nil
}
