//go:build !unix

package modfetch

import "os/exec"

// killGroup leaves cmd as it is: where there are no process groups, the
// context kills git alone.
func killGroup(*exec.Cmd) {}

// runLocked is startWait.
func runLocked(cmd *exec.Cmd, watch func() func() error) error {
	return startWait(cmd, watch)
}
