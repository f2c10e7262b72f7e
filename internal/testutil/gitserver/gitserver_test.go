package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

func TestCloneATagAndAMovedTag(t *testing.T) {
	ca := testca.New(t)
	s := Start(t, ca)
	first := s.Commit(t, "mod", map[string]string{"main.tf": "# one", "modules/x/main.tf": "# x"}, "v1.0.0")
	second := s.Commit(t, "mod", map[string]string{"main.tf": "# two"}, "")
	if first == second {
		t.Fatal("two commits with other files have the same hash")
	}
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	clone := func() string {
		dir := filepath.Join(t.TempDir(), "c")
		cmd := exec.Command("git", "clone", "-q", "--depth", "1", "--branch", "v1.0.0", s.RepoURL("mod"), dir)
		cmd.Env = append(os.Environ(), "GIT_SSL_CAINFO="+caFile, "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("clone: %v\n%s", err, out)
		}
		head, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(head))
	}
	if got := clone(); got != first {
		t.Fatalf("v1.0.0 is %s, want %s", got, first)
	}
	s.Tag(t, "mod", "v1.0.0", second)
	if got := clone(); got != second {
		t.Fatalf("moved v1.0.0 is %s, want %s", got, second)
	}
	if s.Requests() == 0 {
		t.Fatal("no request was counted")
	}
}
