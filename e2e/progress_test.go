package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

var (
	statusLineRe  = regexp.MustCompile(`^\[\d+/\d+ packages\] [0-9.]+ [kMG]?B at [0-9.]+ [kMG]?B/s`)
	packageLineRe = regexp.MustCompile(`^mirrored  registry\.opentofu\.org/hashicorp/p[0-9] 1\.0\.0 (linux_amd64|darwin_arm64) \([0-9.]+ [kMG]?B, signed by [0-9A-F]{16}\)$`)
)

// TestProgressOnATerminal runs a build in a real pseudo-terminal (tmux)
// and reads the screen as a person sees it while the build runs: a status
// line at the bottom with packages done, bytes and rate, and every
// per-package line whole above it; when the build ends the status line is
// gone and the summary follows the package lines.
func TestProgressOnATerminal(t *testing.T) {
	tmux := requireTmux(t)
	caFile, manifest := slowOrigin(t, 4, 200<<10, 30*time.Millisecond) // about 0.4 s a package
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), manifest)
	// CI= : a person's terminal, whatever the environment of the test
	// (CI=true turns the status line off).
	sawStatus, screen := buildOnATerminal(t, tmux, work, caFile, "CI=", "build --parallel 1")
	if !sawStatus {
		t.Errorf("the status line never showed at the bottom of the screen; last screen:\n%s", screen)
	}
	lines := nonEmpty(screen)
	if len(lines) < 11 || lines[len(lines)-1] != "EXITED 0" || !strings.HasPrefix(lines[len(lines)-3], "8 mirrored, 0 already present") ||
		!regexp.MustCompile(`^[0-9.]+ [kMG]?B downloaded, [0-9.]+ [kMG]?B published into .*site in [0-9.]+m?s$`).MatchString(lines[len(lines)-2]) {
		t.Fatalf("the final screen:\n%s", screen)
	}
	for _, l := range lines[:8] {
		if !packageLineRe.MatchString(l) {
			t.Errorf("the final screen has a broken package line %q:\n%s", l, screen)
		}
	}
	if strings.Contains(screen, "packages]") {
		t.Errorf("the status line stayed on the screen:\n%s", screen)
	}
}

// TestInterruptOnATerminal: Ctrl-C in a real pseudo-terminal stops a
// build with one line saying what was published and what is left (not a
// line per unfinished package), one line on stderr, and exit code 130;
// the next run resumes.
func TestInterruptOnATerminal(t *testing.T) {
	tmux := requireTmux(t)
	caFile, manifest := slowOrigin(t, 4, 400<<10, 50*time.Millisecond)
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), manifest)
	script := filepath.Join(work, "run.sh")
	writeFile(t, script, fmt.Sprintf("#!/bin/sh\ntrap : INT\ncd %q\nHOME=%q SSL_CERT_FILE=%q %q build --parallel 2\necho EXITED $?\nsleep 600\n",
		work, t.TempDir(), caFile, tfmirrorBin))
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	tm := onATerminal(t, tmux, script)
	// Interrupt once the first package is in, while others download.
	var screen string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && !strings.Contains(screen, "mirrored  ") {
		time.Sleep(20 * time.Millisecond)
		screen = tm("capture-pane", "-p")
	}
	tm("send-keys", "C-c")
	for time.Now().Before(deadline) && !strings.Contains(screen, "EXITED") {
		time.Sleep(50 * time.Millisecond)
		screen = tm("capture-pane", "-p")
	}
	// The terminal echoes the interrupt as ^C.
	lines := nonEmpty(strings.ReplaceAll(screen, "^C", ""))
	if len(lines) < 3 || lines[len(lines)-1] != "EXITED 130" || lines[len(lines)-2] != "tfmirror: interrupted" ||
		!regexp.MustCompile(`^interrupted after [0-9.]+m?s: [1-7] packages published, [1-7] left; run the same command again to resume \(partial downloads are kept\)$`).MatchString(lines[len(lines)-3]) {
		t.Fatalf("the screen after Ctrl-C:\n%s", screen)
	}
	for _, l := range lines[:len(lines)-3] {
		if !packageLineRe.MatchString(l) {
			t.Errorf("a line that is not a published package: %q\nscreen:\n%s", l, screen)
		}
	}
	// The next run resumes: what was published is present, the rest comes.
	stdout, stderr, code := runTfmirror(t, work, []string{"SSL_CERT_FILE=" + caFile}, "build")
	if code != 0 || !strings.Contains(stdout, "already present") || !strings.Contains(stdout, "8 mirrored, 0 already present") && !strings.Contains(stdout, "mirrored, ") {
		t.Errorf("the run after the interrupt: exit %d\n%s%s", code, stdout, stderr)
	}
}

// buildOnATerminal runs tfmirror with args (and env, "NAME=value ..." or
// "") in a tmux pseudo-terminal until it exits, checking every screen
// that shows the status line; it says whether one did, and returns the
// last screen.
func buildOnATerminal(t *testing.T, tmux, work, caFile, env, args string) (bool, string) {
	t.Helper()
	script := filepath.Join(work, "run.sh")
	writeFile(t, script, fmt.Sprintf("#!/bin/sh\ncd %q\n%s HOME=%q SSL_CERT_FILE=%q %q %s\necho EXITED $?\nsleep 600\n",
		work, env, t.TempDir(), caFile, tfmirrorBin, args))
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	tm := onATerminal(t, tmux, script)

	var sawStatus bool
	var screen string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		screen = tm("capture-pane", "-p")
		lines := nonEmpty(screen)
		if len(lines) > 0 && statusLineRe.MatchString(lines[len(lines)-1]) {
			sawStatus = true
			for _, l := range lines[:len(lines)-1] {
				if !packageLineRe.MatchString(l) && !strings.HasPrefix(l, "warning") {
					t.Errorf("a line above the status line is not a whole package line: %q\nscreen:\n%s", l, screen)
				}
			}
		}
		if strings.Contains(screen, "EXITED") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return sawStatus, screen
}

// With --quiet, or in a CI job (CI=true) that gives the build a
// terminal, there is no status line: a CI log would keep every redraw.
func TestNoProgressWhenQuietOrInCI(t *testing.T) {
	tmux := requireTmux(t)
	caFile, manifest := slowOrigin(t, 2, 400<<10, 30*time.Millisecond)
	for _, run := range []struct{ env, args string }{{"CI=", "build --parallel 1 --quiet"}, {"CI=true", "build --parallel 1"}} {
		work := t.TempDir()
		writeFile(t, filepath.Join(work, "mirror.hcl"), manifest)
		sawStatus, screen := buildOnATerminal(t, tmux, work, caFile, run.env, run.args)
		if sawStatus || !strings.Contains(screen, "EXITED 0") {
			t.Errorf("%s tfmirror %s: a status line shown %v, want none and exit 0; last screen:\n%s", run.env, run.args, sawStatus, screen)
		}
	}
}

// onATerminal runs script in a new tmux session (160×40) until the test
// ends, and returns a function running a tmux command against it.
func onATerminal(t *testing.T, tmux, script string) func(args ...string) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tm("-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "40", script)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", socket, "kill-server").Run() })
	return tm
}

// requireTmux is tmux's path; without it the test fails under CI (or
// TFMIRROR_E2E), and is skipped elsewhere.
func requireTmux(t *testing.T) string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if serverproc.Required() {
			t.Fatalf("tmux is required: %v", err)
		}
		t.Skipf("no tmux: %v", err)
	}
	return tmux
}

func nonEmpty(screen string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// slowOrigin serves n providers, hashicorp/p0 and on, version 1.0.0 for
// linux_amd64 and darwin_arm64, each archive of size bytes sent with
// delay between chunks, so that a build takes long enough to watch. It
// returns the CA file clients trust and a manifest selecting them all.
func slowOrigin(t *testing.T, n, size int, delay time.Duration) (caFile, manifest string) {
	t.Helper()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	var b strings.Builder
	b.WriteString(`platforms = ["linux_amd64", "darwin_arm64"]` + "\n")
	for i := range n {
		reg.AddWithSize("hashicorp", fmt.Sprintf("p%d", i), "1.0.0", size, "linux_amd64", "darwin_arm64")
		fmt.Fprintf(&b, "provider \"hashicorp/p%d\" { versions = \"1.0.0\" }\n", i)
	}
	reg.SetArchiveDelay(delay)
	fmt.Fprintf(&b, "host \"registry.opentofu.org\" {\n  services = { \"providers.v1\" = %q }\n}\n", reg.ServicesURL)
	caFile, _, _ = ca.WriteFiles(t, t.TempDir())
	return caFile, b.String()
}
