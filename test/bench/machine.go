//go:build linux

package bench

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Machine describes the computer a benchmark ran on.
type Machine struct {
	// CPU is the processor model, from /proc/cpuinfo.
	CPU string `json:"cpu"`
	// Cores is the number of logical CPUs usable by the process.
	Cores int `json:"cores"`
	// MemoryMiB is the total memory, from /proc/meminfo.
	MemoryMiB int64 `json:"memoryMiB"`
	// Go is the Go version the benchmark (and the operators) were built with.
	Go string `json:"go"`
	// OS is the distribution and kernel.
	OS string `json:"os"`
}

// describeMachine collects what it can; missing facts stay empty.
func describeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), CPU: cpuModel()}
	if kib, err := procStatusField("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemoryMiB = kib / 1024
	}
	m.OS = osName()
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		kernel := "Linux " + utsString(u.Release[:]) + " " + utsString(u.Machine[:])
		if m.OS == "" {
			m.OS = kernel
		} else {
			m.OS += ", " + kernel
		}
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func osName() string {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// utsString decodes a NUL-terminated Utsname field (int8 or uint8 by
// architecture).
func utsString[T int8 | uint8](field []T) string {
	var b strings.Builder
	for _, c := range field {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// controlPlaneVersions asks the binaries in assets for their versions, e.g.
// "kube-apiserver v1.37.0, etcd 3.6.16".
func controlPlaneVersions(assets string) string {
	var parts []string
	for _, bin := range controlPlaneBinaries {
		out, err := exec.Command(filepath.Join(assets, bin), "--version").Output()
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		// "Kubernetes v1.37.0" or "etcd Version: 3.6.16"
		fields := strings.Fields(first)
		if len(fields) == 0 {
			continue
		}
		version := fields[len(fields)-1]
		if strings.HasPrefix(version, "v0.0.0") {
			// Built from the module proxy, the binary does not know its
			// version; the folder it was built into does.
			folder, ok := strings.CutSuffix(filepath.Base(assets), "-"+runtime.GOOS+"-"+runtime.GOARCH)
			if !ok {
				continue
			}
			version = "v" + strings.TrimPrefix(folder, "v")
		}
		parts = append(parts, bin+" "+version)
	}
	return strings.Join(parts, ", ")
}

// loadAverage returns the 1, 5 and 15 minute load averages, e.g.
// "0.52 0.31 0.20".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return ""
	}
	return strings.Join(fields[:3], " ")
}

// busy reports whether a 1-minute load average (as loadAverage returns it)
// shows other work on more than half of the machine's CPUs.
func busy(load string, cores int) bool {
	fields := strings.Fields(load)
	if len(fields) == 0 {
		return false
	}
	l, err := strconv.ParseFloat(fields[0], 64)
	return err == nil && l > float64(cores)/2
}
