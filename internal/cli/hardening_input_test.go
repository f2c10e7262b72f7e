//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Hostile input files: a manifest error never shows a credential, and deep
// nesting, pipes, devices and huge files are refused with an error naming
// the file (exit 2), within seconds.

// inputRun runs tfmirror in dir and fails the test if it takes longer than
// 20 seconds; the named pipes are then released so that the test ends.
func inputRun(t *testing.T, o origin, dir string, pipes []string, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := o.run(t, dir, args...)
		done <- result{code, stdout, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout + r.stderr
	case <-time.After(20 * time.Second):
		for _, p := range pipes {
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
		t.Fatalf("tfmirror %s did not return within 20s", strings.Join(args, " "))
		return 0, ""
	}
}

func TestManifestErrorsNeverShowTokens(t *testing.T) {
	const secret = "tfm-SECRET-7f3a9c"
	manifests := map[string]string{
		"unclosed block":     `credentials "registry.example.com" { token = "` + secret + `" `,
		"error on the token": "credentials \"registry.example.com\" {\n  token = \"" + secret + "\" }\n}\n",
		"misspelled block":   `credential "registry.example.com" { token = "` + secret + `" }`,
	}
	o := newOrigin(t)
	for name, text := range manifests {
		for _, mode := range [][]string{{"build"}, {"build", "--json"}} {
			t.Run(name+" "+strings.Join(mode, " "), func(t *testing.T) {
				dir := t.TempDir()
				writeManifest(t, dir, text)
				code, out := inputRun(t, o, dir, nil, mode...)
				if code != ExitUsage || !strings.Contains(out, "mirror.hcl:") {
					t.Errorf("exit %d, want %d with the error's position:\n%s", code, ExitUsage, out)
				}
				if strings.Contains(out, secret[4:10]) {
					t.Errorf("the output shows the token:\n%s", out)
				}
				if !strings.Contains(out, `token = "*****************"`) {
					t.Errorf("the output does not show the line, masked:\n%s", out)
				}
			})
		}
	}
}

// confDir writes a root module requiring hashicorp/foo, with extra files.
func confDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files["versions.tf"] = "terraform {\n  required_providers {\n    foo = { source = \"hashicorp/foo\" }\n  }\n}\n"
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDeepNestingIsRefused(t *testing.T) {
	deep := strings.Repeat("[", 100_000)
	o := newOrigin(t)
	tests := []struct {
		name string
		dir  func(t *testing.T) (work string, args []string)
		want string
	}{
		{"manifest", func(t *testing.T) (string, []string) {
			dir := t.TempDir()
			writeManifest(t, dir, "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/foo\" { versions = "+deep+" }\n")
			return dir, []string{"build"}
		}, "mirror.hcl:2:"},
		{"configuration", func(t *testing.T) (string, []string) {
			conf := confDir(t, map[string]string{"main.tf": "locals {\n  x = " + deep + "\n}\n"})
			return t.TempDir(), []string{"build", "--dry-run", "--platform", "linux_amd64", conf}
		}, "conf/main.tf:2:"},
		{"lock file", func(t *testing.T) (string, []string) {
			conf := confDir(t, map[string]string{".terraform.lock.hcl": "provider \"registry.opentofu.org/hashicorp/foo\" {\n  version = " + deep + "\n}\n"})
			return t.TempDir(), []string{"build", "--dry-run", "--platform", "linux_amd64", conf}
		}, ".terraform.lock.hcl:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work, args := tt.dir(t)
			code, out := inputRun(t, o, work, nil, args...)
			if code != ExitUsage || !strings.Contains(out, tt.want) || !strings.Contains(out, "Nesting too deep") {
				t.Errorf("exit %d, want %d and a refusal at %s:\n%.2000s", code, ExitUsage, tt.want, out)
			}
		})
	}
}

func TestInputsThatAreNotFilesAreRefused(t *testing.T) {
	o := newOrigin(t)
	for _, kind := range []string{"fifo", "device"} {
		for _, which := range []string{"mirror.hcl", "main.tf", ".terraform.lock.hcl"} {
			t.Run(kind+" "+which, func(t *testing.T) {
				work, conf := t.TempDir(), confDir(t, map[string]string{})
				args := []string{"build", "--dry-run", "--platform", "linux_amd64", conf}
				path := filepath.Join(conf, which)
				if which == "mirror.hcl" {
					path = filepath.Join(work, which)
					args = []string{"build", "--config", path}
				}
				var pipes []string
				if kind == "fifo" {
					if err := syscall.Mkfifo(path, 0o644); err != nil {
						t.Fatal(err)
					}
					pipes = append(pipes, path)
				} else if err := os.Symlink("/dev/zero", path); err != nil {
					t.Fatal(err)
				}
				code, out := inputRun(t, o, work, pipes, args...)
				if code != ExitUsage || !strings.Contains(out, which+": Not a regular file") {
					t.Errorf("exit %d, want %d and a refusal naming %s:\n%s", code, ExitUsage, which, out)
				}
			})
		}
	}
}
