package testnet

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd's process when the test binary
// that started it dies, however it dies (a timeout, SIGKILL), so a killed
// test run leaves no server behind.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
