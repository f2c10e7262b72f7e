package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/hostileoci"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// TestSecondInterruptEndsAPublication interrupts a build while it
// publishes into a registry that has stopped answering. The first
// interrupt lets the publication go on (its grace is 30 seconds), so the
// process is still there a while later; a second one ends it at once, as
// the signal's default does. The next build, the registry answering
// again, leaves a mirror verify finds whole.
func TestSecondInterruptEndsAPublication(t *testing.T) {
	c := newCrashRegistry(t)
	srv := registrytest.StartWith(t, registrytest.Options{CA: c.ca})
	proxy := hostileoci.Start(t, c.ca, srv.URL())
	proxy.Set(hostileoci.HangManifestPuts)
	env := append(append([]string(nil), c.env...), "TFMIRROR_OCI_USERNAME="+srv.Username, "TFMIRROR_OCI_PASSWORD="+srv.Password)
	uri := "oci://" + proxy.Host + "/mirror/${namespace}/${type}"
	p := startTfmirror(t, c.work, env, "build", "--config", "partial.hcl", "--out", uri)
	p.waitUntil(t, "it published a manifest", func() bool { return proxy.Hung() > 0 })
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		t.Fatalf("the first interrupt ended the publication at once: %v\n%s%s", p.waitErr, p.stdout.String(), p.stderr.String())
	case <-time.After(2 * time.Second):
	}
	second := time.Now()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("5s after a second interrupt, tfmirror still runs\n%s%s", p.stdout.String(), p.stderr.String())
	}
	var exit *exec.ExitError
	ws, ok := syscall.WaitStatus(0), false
	if errors.As(p.waitErr, &exit) {
		ws, ok = exit.Sys().(syscall.WaitStatus)
	}
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("after the second interrupt: %v; want the process ended by SIGINT", p.waitErr)
	}
	t.Logf("ended %s after the second interrupt\n%s", time.Since(second).Round(time.Millisecond), p.stderr.String())

	// What the process left is cleaned up by the next run, which the
	// registry answers again: the mirror is then whole.
	proxy.Set(hostileoci.None)
	c.env = env
	c.build(t, "partial.hcl", uri)
	stdout, stderr, code := runTfmirror(t, c.work, env, "verify", "--config", "partial.hcl", uri)
	if code != 0 || !strings.Contains(stdout, "2 providers, 2 versions, 4 archives checked: 0 problems") {
		t.Errorf("verify after the next build: exit %d\n%s%s", code, stdout, stderr)
	}
}
