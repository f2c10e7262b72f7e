package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --shard that is not K/N with K from 1 to N, or that comes with a flag
// needing the whole mirror, is a usage error (exit 2) naming the flag, and
// nothing is written.
func TestBuildShardUsageErrors(t *testing.T) {
	o := newOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, "provider \"hashicorp/foo\" {\n  versions = \"1.0.0\"\n}\n"+o.hostBlock("registry.opentofu.org"))
	cases := map[string][]string{
		"0/4":                        {"--shard", "0/4"},
		"5/4":                        {"--shard", "5/4"},
		"1/0":                        {"--shard", "1/0"},
		"4":                          {"--shard", "4"},
		"a/b":                        {"--shard", "a/b"},
		"--write-lock-files":         {"--shard", "1/2", "--write-lock-files", "."},
		"--registry-replica":         {"--shard", "1/2", "--registry-replica"},
		"JOB_COMPLETION_INDEX unset": {"--shard", "/4"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			site := filepath.Join(t.TempDir(), "site")
			code, stdout, stderr := o.run(t, dir, append([]string{"build", "--out", site}, args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, "--") || !strings.Contains(stderr, "shard") {
				t.Errorf("the error does not name the flag:\n%s", stderr)
			}
			if _, err := os.Stat(site); !os.IsNotExist(err) {
				t.Errorf("the output directory was created: %v", err)
			}
		})
	}
}
