package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/golden"
)

// TestReferenceUpToDate fails when docs/cli is not what the command tree
// gives: a flag, a command or a help text changed (here or in a merge)
// without the reference being written again.
func TestReferenceUpToDate(t *testing.T) {
	const fix = "run `go generate ./internal/cli` (or `go run ./internal/cli/gendocs docs/cli` from the repository's root) and commit docs/cli"
	committed := filepath.Join("..", "..", "docs", "cli")
	fresh := t.TempDir()
	if err := WriteReference(fresh); err != nil {
		t.Fatal(err)
	}
	want := pages(t, fresh)
	got := pages(t, committed)
	if len(want) == 0 {
		t.Fatal("the generator wrote no page")
	}
	for name, body := range want {
		old, ok := got[name]
		switch {
		case !ok:
			t.Errorf("docs/cli/%s is missing: %s", name, fix)
		case old != body:
			t.Errorf("docs/cli/%s is stale (%s)", name, golden.FirstDifference(old, body))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/cli/%s documents no command", name)
		}
	}
	if t.Failed() {
		t.Log(fix)
	}
}

// TestReferenceDeterministic: two runs write the same bytes (no date, no
// order that depends on a map).
func TestReferenceDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if err := WriteReference(dir); err != nil {
			t.Fatal(err)
		}
	}
	pa, pb := pages(t, a), pages(t, b)
	for name, body := range pa {
		if pb[name] != body {
			t.Errorf("%s differs between two runs", name)
		}
		if strings.Contains(body, "Auto generated") {
			t.Errorf("%s carries cobra's dated footer", name)
		}
	}
}

// TestReferenceRemovesStalePages: a page of a command that is gone does
// not survive a regeneration.
func TestReferenceRemovesStalePages(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "tfmirror_gone.md")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteReference(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("tfmirror_gone.md survived: %v", err)
	}
}

func pages(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	out := make(map[string]string, len(names))
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = string(data)
	}
	return out
}
