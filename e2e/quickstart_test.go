package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuickstartAsWritten runs the README's "Try it" commands as written,
// from the repository's root, with no network: the only changes are the
// binaries (the tfmirror built for the tests for `go run ./cmd/tfmirror`,
// the tofu under test for `tofu`). The backgrounded serve is waited for,
// then stopped; the files the quickstart writes are removed.
func TestQuickstartAsWritten(t *testing.T) {
	tofu := tofuBin(t)
	if ln, err := net.Listen("tcp", "127.0.0.1:8443"); err != nil {
		if isCI() {
			t.Fatalf("the quickstart serves on 127.0.0.1:8443, which is in use: %v", err)
		}
		t.Skipf("the quickstart serves on 127.0.0.1:8443, which is in use: %v", err)
	} else {
		_ = ln.Close()
	}
	cmds := quickstartCommands(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	qs := filepath.Join(root, "examples", "quickstart")
	for _, p := range []string{"site", "ca.pem", "config/.terraform", "config/.terraform.lock.hcl"} {
		p := filepath.Join(qs, filepath.FromSlash(p))
		_ = os.RemoveAll(p)
		t.Cleanup(func() { _ = os.RemoveAll(p) })
	}
	bin := t.TempDir()
	if err := os.Symlink(tofu, filepath.Join(bin, "tofu")); err != nil {
		t.Fatal(err)
	}
	env := mergeEnv(baseEnv(), []string{"HOME=" + t.TempDir(), "PATH=" + bin + ":" + os.Getenv("PATH"), "CHECKPOINT_DISABLE=1"})
	run := func(line string) *exec.Cmd {
		line = strings.ReplaceAll(line, "go run ./cmd/tfmirror", tfmirrorBin)
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", line)
		cmd.Dir, cmd.Env = root, env
		return cmd
	}
	var out string
	lockFile := filepath.Join(qs, "config", ".terraform.lock.hcl")
	var locked []byte
	for _, line := range cmds {
		if strings.Contains(line, "tofu init") {
			locked, _ = os.ReadFile(lockFile)
		}
		if bg, ok := strings.CutSuffix(line, "&"); ok {
			cmd := run(strings.TrimSpace(bg))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			waitForPort(t, "127.0.0.1:8443")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := run(line)
		cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
		cmd.Dir, cmd.Env = root, env
		data, err := cmd.CombinedOutput()
		cancel()
		t.Logf("$ %s\n%s", line, data)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out = string(data)
	}
	if !strings.Contains(out, "Installed registry.tfmirror.test/examples/hello v0.2.0") {
		t.Errorf("tofu init did not install the quickstart provider:\n%s", out)
	}
	// The lock file holds every platform the mirror holds, and tofu init
	// neither warns that it is incomplete nor rewrites it.
	if strings.Contains(out, "Incomplete lock file information") {
		t.Errorf("tofu init warns of an incomplete lock file:\n%s", out)
	}
	after, err := os.ReadFile(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(locked) {
		t.Errorf("tofu init rewrote the lock file tfmirror lock wrote:\nbefore:\n%s\nafter:\n%s", locked, after)
	}
	hashes := parseLockFile(t, lockFile)["registry.tfmirror.test/examples/hello"]
	var h1, zh int
	for _, h := range hashes {
		switch {
		case strings.HasPrefix(h, "h1:"):
			h1++
		case strings.HasPrefix(h, "zh:"):
			zh++
		}
	}
	if h1 != 4 || zh != 4 {
		t.Errorf("the lock file holds %d h1: and %d zh: hashes; want those of the 4 platforms the quickstart mirrors: %q", h1, zh, hashes)
	}

	// Terraform, through the same mirror and the same client
	// configuration, takes the lock file tfmirror wrote as it is too.
	t.Run("terraform", func(t *testing.T) {
		terraform := terraformBin(t)
		wd := t.TempDir()
		copyTree(t, filepath.Join(qs, "config"), wd)
		_ = os.RemoveAll(filepath.Join(wd, ".terraform"))
		cmd := exec.Command(terraform, "init", "-no-color", "-input=false")
		cmd.Dir = wd
		cmd.Env = mergeEnv(env, []string{"SSL_CERT_FILE=" + filepath.Join(qs, "ca.pem"), "TF_CLI_CONFIG_FILE=" + filepath.Join(qs, "tofurc")})
		data, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform init: %v\n%s", err, data)
		}
		if !strings.Contains(string(data), "Installed registry.tfmirror.test/examples/hello v0.2.0") || strings.Contains(string(data), "Incomplete lock file information") {
			t.Errorf("terraform init did not install the provider against a complete lock file:\n%s", data)
		}
		if got, _ := os.ReadFile(filepath.Join(wd, ".terraform.lock.hcl")); string(got) != string(locked) {
			t.Errorf("terraform init rewrote the lock file tfmirror lock wrote:\n%s", lineDiff(string(locked), string(got)))
		}
	})
}

// quickstartCommands are the lines of the README's "Try it" block.
func quickstartCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "## Try it")
	if !ok {
		t.Fatal("the README has no \"Try it\" section")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("the README's \"Try it\" section has no sh block")
	}
	var cmds []string
	for line := range strings.Lines(block) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) != 4 {
		t.Fatalf("the \"Try it\" block has %d commands, this test knows 4: %q", len(cmds), cmds)
	}
	return cmds
}

func waitForPort(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}
