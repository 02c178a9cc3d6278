package robustness

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process when the test's process
// ends, so that a test binary that dies (a panic, a timeout) leaves no
// operator process behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
