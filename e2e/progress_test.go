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
	statusLineRe  = regexp.MustCompile(`^\[\d+/8 packages\] [0-9.]+ [kMG]?B at [0-9.]+ [kMG]?B/s`)
	packageLineRe = regexp.MustCompile(`^mirrored  registry\.opentofu\.org/hashicorp/p[0-9] 1\.0\.0 (linux_amd64|darwin_arm64) \([0-9.]+ [kMG]?B, signed by [0-9A-F]{16}\)$`)
)

// TestProgressOnATerminal runs a build in a real pseudo-terminal (tmux)
// and reads the screen as a person sees it while the build runs: a status
// line at the bottom with packages done, bytes and rate, and every
// per-package line whole above it; when the build ends the status line is
// gone and the summary follows the package lines.
func TestProgressOnATerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if serverproc.Required() {
			t.Fatalf("tmux is required: %v", err)
		}
		t.Skipf("no tmux: %v", err)
	}
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	for i := range 4 {
		reg.AddWithSize("hashicorp", fmt.Sprintf("p%d", i), "1.0.0", 200<<10, "linux_amd64", "darwin_arm64")
	}
	reg.SetArchiveDelay(30 * time.Millisecond) // between 16 kB chunks: about 0.4 s a package
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/p0" { versions = "1.0.0" }
provider "hashicorp/p1" { versions = "1.0.0" }
provider "hashicorp/p2" { versions = "1.0.0" }
provider "hashicorp/p3" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, reg.ServicesURL))
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	script := filepath.Join(work, "run.sh")
	writeFile(t, script, fmt.Sprintf("#!/bin/sh\ncd %q\nHOME=%q SSL_CERT_FILE=%q %q build --parallel 1\necho EXITED $?\nsleep 600\n",
		work, t.TempDir(), caFile, tfmirrorBin))
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
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
	if !sawStatus {
		t.Errorf("the status line never showed at the bottom of the screen; last screen:\n%s", screen)
	}
	lines := nonEmpty(screen)
	if len(lines) < 10 || lines[len(lines)-1] != "EXITED 0" || !strings.HasPrefix(lines[len(lines)-2], "8 mirrored, 0 already present") {
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

func nonEmpty(screen string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}
