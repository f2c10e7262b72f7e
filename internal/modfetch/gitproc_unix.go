//go:build unix && !linux

package modfetch

import (
	"os/exec"
	"syscall"
)

// killGroup runs cmd in a process group of its own and, when its context
// ends, kills the whole group: git's helpers (git-remote-https) too.
// Other systems than Linux have no parent-death signal.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// runLocked is startWait.
func runLocked(cmd *exec.Cmd, watch func() func() error) error {
	return startWait(cmd, watch)
}
