package modfetch

import "os/exec"

// startWait starts cmd, watches it with what watch starts, and waits for
// it. The watch's error (its work area went past its limits) wins over
// cmd's, which is then only that it was killed.
func startWait(cmd *exec.Cmd, watch func() func() error) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := watch()
	err := cmd.Wait()
	if over := stop(); over != nil {
		return over
	}
	return err
}
