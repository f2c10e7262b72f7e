//go:build !linux

package testnet

import "os/exec"

// DieWithParent does nothing where the kernel cannot tie a process's life
// to its parent's; the servers' cleanup functions still stop them.
func DieWithParent(*exec.Cmd) {}
