package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/layout"
)

func TestConcurrentBuildsDoNotInterleave(t *testing.T) {
	o, dir := fooOrigin(t)
	// Another build holds the tree.
	other, err := layout.Open(filepath.Join(dir, "site"))
	if err != nil {
		t.Fatal(err)
	}

	code, _, stderr := o.run(t, dir, "build", "--lock-timeout", "0")
	if code != ExitFailure || !strings.Contains(stderr, "another tfmirror process is writing this mirror") || !strings.Contains(stderr, "pid ") {
		t.Fatalf("exit %d, want %d with a message naming the holder:\n%s", code, ExitFailure, stderr)
	}

	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = other.Close()
	}()
	code, stdout, stderr := o.run(t, dir, "build", "--lock-timeout", "30s")
	if code != ExitOK || !strings.Contains(stdout, "1 mirrored") {
		t.Fatalf("a build waiting for the lock: exit %d\n%s%s", code, stdout, stderr)
	}
}
