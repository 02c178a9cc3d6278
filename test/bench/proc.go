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
	_, fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	// Counted after the command name: state is field 3, utime 14, stime 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, fields)
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

// procStat reads /proc/<pid>/stat: the command name (field 2, in
// parentheses, which may hold spaces and parentheses itself) and the
// fields after it, from the state (field 3) on.
func procStat(pid int) (comm string, fields []string, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil, err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", nil, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return s[open+1 : closing], strings.Fields(s[closing+1:]), nil
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
	self := strconv.Itoa(os.Getpid())
	found := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		comm, fields, err := procStat(pid)
		if err != nil {
			continue // gone since the listing
		}
		if len(fields) >= 2 && fields[1] == self && slices.Contains(names, comm) { // fields[1]: the parent
			found[comm] = pid
		}
	}
	return found, nil
}
