package compat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/golden"
)

// TestDocsUpToDate fails when docs/compatibility.md is not what the matrix
// renders: a cell, a column or a method changed (here or in a merge)
// without the page being written again.
func TestDocsUpToDate(t *testing.T) {
	const fix = "run `go generate ./internal/compat` (or `go run ./internal/compat/gencompat docs/compatibility.md` from the repository's root) and commit docs/compatibility.md"
	want, err := Markdown()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "compatibility.md"))
	if err != nil {
		t.Fatalf("%v: %s", err, fix)
	}
	if string(got) != string(want) {
		t.Errorf("docs/compatibility.md is stale (%s): %s", golden.FirstDifference(string(got), string(want)), fix)
	}
}

// TestEveryCell fails when a column lacks an expectation for a method, or
// a cell says neither what works nor why it does not.
func TestEveryCell(t *testing.T) {
	for _, m := range Methods {
		for _, c := range Columns {
			cell, err := CellOf(m.ID, c.ID)
			switch {
			case err != nil:
				t.Error(err)
			case cell.Works && !m.Modules && !m.LockOnly && (cell.Installed == "" || cell.Default == 0 || cell.Other == 0):
				t.Errorf("%s through %s works but says not what init prints or writes", c.ID, m.ID)
			case !cell.Works && (cell.Error == "" || cell.Why == ""):
				t.Errorf("%s through %s does not work but says not why", c.ID, m.ID)
			}
		}
	}
}

func TestColumnOf(t *testing.T) {
	for _, tc := range []struct {
		program Program
		version string
		want    string
	}{
		{OpenTofu, "1.12.6", "tofu-1.12"},
		{OpenTofu, "1.12.6-dev", "tofu-1.12"},
		{OpenTofu, "1.13.0", "tofu-1.12"},
		{OpenTofu, "1.10.10", "tofu-1.10"},
		{OpenTofu, "1.11.0", "tofu-1.10"},
		{Terraform, "1.5.7", "terraform"},
		{Terraform, "1.11.4", "terraform"},
		{OpenTofu, "1.9.0", ""},
		{Terraform, "1.4.6", ""},
		{Terraform, "not a version", ""},
	} {
		c, err := ColumnOf(tc.program, tc.version)
		if c.ID != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("ColumnOf(%s, %s) = %q, %v; want %q", tc.program, tc.version, c.ID, err, tc.want)
		}
	}
}
