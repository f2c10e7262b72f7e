//go:build linux

package modfetch

import (
	"os/exec"
	"runtime"
	"syscall"
)

// killGroup runs cmd in a process group of its own and, when its context
// ends, kills the whole group: git's helpers (git-remote-https,
// index-pack) too. git is also killed when tfmirror dies, even by SIGKILL
// (a parent-death signal); its helpers then find their pipes to it closed
// and end.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// runLocked runs cmd on one OS thread from start to end: Linux sends the
// parent-death signal when the thread that started the child ends, and Go
// may end threads, so the thread is kept while git runs. watch starts
// watching once git has started and returns what stops it.
func runLocked(cmd *exec.Cmd, watch func() func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return startWait(cmd, watch)
}
