package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

// A retried request is a "retry" event with --json and, for people, a
// line only with --verbose: a retry that then works is routine.
func TestRetriesAreShown(t *testing.T) {
	archive := fakeregistry.ArchivePath("hashicorp", "foo", "1.0.0", "linux_amd64")
	for _, c := range []struct {
		name string
		args []string
		want bool
	}{
		{"json", []string{"--json"}, true},
		{"text", nil, false},
		{"verbose", []string{"--verbose"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newOrigin(t)
			o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
			o.reg.FailTimes(archive, 503, 1)
			dir := t.TempDir()
			writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
			code, stdout, stderr := o.run(t, dir, append([]string{"build"}, c.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			got := ""
			for _, line := range strings.Split(stdout, "\n") {
				if strings.Contains(line, "retr") && strings.Contains(line, archive) {
					got = line
				}
			}
			if (got != "") != c.want {
				t.Fatalf("retry shown: %q, want shown %v\n%s", got, c.want, stdout)
			}
			if c.name != "json" {
				return
			}
			var ev struct {
				Event   string
				Attempt int
				URL     string
			}
			if err := json.Unmarshal([]byte(got), &ev); err != nil || ev.Event != "retry" || ev.Attempt != 2 || !strings.HasSuffix(ev.URL, archive) {
				t.Errorf("retry event %+v (%v), want attempt 2 of %s", ev, err, archive)
			}
		})
	}
}

// A build that waits for the lock of its destination says so, on a
// terminal and in --json, instead of seeming stuck.
func TestLockWaitIsShown(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		o, dir := fooOrigin(t)
		lock := filepath.Join(dir, "site", ".tfmirror", "lock")
		if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		unlock, err := atomicfile.Lock(context.Background(), lock, 0)
		if err != nil {
			t.Fatal(err)
		}
		released := time.AfterFunc(700*time.Millisecond, func() { _ = unlock() })
		args := []string{"build", "--lock-timeout", "30s"}
		if asJSON {
			args = append(args, "--json")
		}
		code, stdout, stderr := o.run(t, dir, args...)
		released.Stop()
		_ = unlock()
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
		}
		want := "waiting for the lock of "
		if asJSON {
			want = `{"event":"waiting","what":"the lock of `
		}
		if !strings.Contains(stdout, want) || !strings.Contains(stdout, "lock") {
			t.Errorf("json %v: the wait is not shown (want %q):\n%s", asJSON, want, stdout)
		}
	}
}
