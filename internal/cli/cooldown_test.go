package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCooldownHoldsBackNewReleases runs builds at chosen times: a version
// is published only once it has been seen upstream for min_age, counted
// from the first build that saw it (recorded in the mirror); the dry run
// and the summary say what is held back and until when.
func TestCooldownHoldsBackNewReleases(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
min_age = "7d"
provider "hashicorp/foo" {
  versions = ">= 1.0"
  newest   = 1
}
`+o.hostBlock("registry.opentofu.org"))
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	build := func(at time.Time, args ...string) (int, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		wd, _ := os.Getwd()
		t.Chdir(dir)
		defer t.Chdir(wd)
		env := Env{Args: append([]string{"build"}, args...), Stdout: &stdout, Stderr: &stderr, Environ: o.environ, now: func() time.Time { return at }}
		code := Main(context.Background(), env)
		return code, stdout.String() + stderr.String()
	}
	index := filepath.Join(dir, "site", "registry.opentofu.org", "hashicorp", "foo", "index.json")

	code, out := build(t0, "--dry-run")
	if code != 0 || !strings.Contains(out, "registry.opentofu.org/hashicorp/foo 1.1.0 is held back until 2026-11-08T12:00:00Z") {
		t.Fatalf("dry run at t0: exit %d, want the held-back versions and until when\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "site", "first-seen.json")); !os.IsNotExist(err) {
		t.Errorf("a dry run recorded first-seen times: %v", err)
	}
	code, out = build(t0)
	if code != 0 || !strings.Contains(out, "held back until 2026-11-08T12:00:00Z") {
		t.Fatalf("build at t0: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(index); !os.IsNotExist(err) {
		t.Fatalf("a release younger than min_age was published: %v", err)
	}
	// Six days later: still too young, counted from the first build.
	if code, out = build(t0.Add(6 * 24 * time.Hour)); code != 0 || !strings.Contains(out, "held back until 2026-11-08T12:00:00Z") {
		t.Fatalf("build at t0+6d: exit %d\n%s", code, out)
	}
	// Eight days later: the newest is old enough.
	o.reg.Add("hashicorp", "foo", "1.2.0", "linux_amd64")
	code, out = build(t0.Add(8 * 24 * time.Hour))
	if code != 0 || !strings.Contains(out, "mirrored  registry.opentofu.org/hashicorp/foo 1.1.0") || !strings.Contains(out, "foo 1.2.0 is held back until 2026-11-16T12:00:00Z") {
		t.Fatalf("build at t0+8d: exit %d, want 1.1.0 mirrored and 1.2.0 (first seen now) held back\n%s", code, out)
	}
	data, err := os.ReadFile(index)
	if err != nil || strings.Contains(string(data), "1.2.0") || !strings.Contains(string(data), "1.1.0") {
		t.Fatalf("index.json after t0+8d: %s %v", data, err)
	}

	// A bad min_age is bad input at its position.
	writeManifest(t, dir, `platforms = ["linux_amd64"]
min_age = "soon"
`+o.hostBlock("registry.opentofu.org"))
	if code, out := build(t0); code != ExitUsage || !strings.Contains(out, "Invalid min_age") {
		t.Errorf("a bad min_age: exit %d\n%s", code, out)
	}
}
