//go:build linux

package bench

import (
	"os"
	"os/exec"
	"testing"
)

func TestChildPIDsFindsThisProcesssChildrenByName(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	found, err := childPIDs("sleep", "no-such-command")
	if err != nil {
		t.Fatal(err)
	}
	if found["sleep"] != child.Process.Pid {
		t.Errorf("childPIDs = %v, want sleep: %d", found, child.Process.Pid)
	}
	if _, ok := found["no-such-command"]; ok {
		t.Errorf("childPIDs found a command that does not run: %v", found)
	}
	comm, _, err := procStat(os.Getpid())
	if err != nil || comm == "" {
		t.Errorf("procStat of this process = %q, %v", comm, err)
	}
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Errorf("cpuTime of this process: %v", err)
	}
}
