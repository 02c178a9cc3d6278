//go:build !linux

package robustness

import "os/exec"

// dieWithParent does nothing where the kernel cannot end a process with
// its parent: there a test binary that dies (a panic, a timeout) may leave
// an operator process behind, to be killed by hand.
func dieWithParent(*exec.Cmd) {}
