package serverproc

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd's process when the process that
// started it dies, however it dies (a test timeout, SIGKILL), so a killed
// test run or benchmark leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
