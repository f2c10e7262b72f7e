//go:build !linux

package serverproc

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a process's life
// to its parent's; Stop still ends it.
func dieWithParent(*exec.Cmd) {}
