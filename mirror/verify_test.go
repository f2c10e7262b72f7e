package mirror

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
)

func verifyTree(t *testing.T, root string) *VerifyReport {
	t.Helper()
	tree, err := layout.OpenExisting(root)
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Verifier{Mirror: tree, Checker: fakeChecker{}, TempDir: t.TempDir()}).Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVerifyAcceptsABuiltTree(t *testing.T) {
	h, _ := builtTree(t)
	r := verifyTree(t, h.root)
	if len(r.Problems) != 0 || len(r.Warnings) != 0 {
		t.Fatalf("problems %v, warnings %v", r.Problems, r.Warnings)
	}
	if r.Providers != 1 || r.Versions != 2 || r.Archives != 4 {
		t.Errorf("checked %d providers, %d versions, %d archives; want 1, 2, 4", r.Providers, r.Versions, r.Archives)
	}
}

func TestVerifyFindsEachCorruption(t *testing.T) {
	const (
		archive = fooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip"
		vdoc    = fooDir + "1.0.0.json"
	)
	tests := []struct {
		name     string
		corrupt  func(t *testing.T, root string)
		wantPath string
		wantMsg  string
	}{
		{"flipped byte in an archive", func(t *testing.T, root string) { flipByte(t, filepath.Join(root, archive)) }, archive, ""},
		{"archive removed", func(t *testing.T, root string) { remove(t, filepath.Join(root, archive)) }, archive, "listed but missing"},
		{"version document removed", func(t *testing.T, root string) { remove(t, filepath.Join(root, vdoc)) }, vdoc, "clients fail"},
		{"version document not JSON", func(t *testing.T, root string) { write(t, filepath.Join(root, vdoc), "<html>") }, vdoc, "parse version document"},
		{"wrong hash listed", func(t *testing.T, root string) {
			replaceIn(t, filepath.Join(root, vdoc), `"zh:`, `"zh:0`)
		}, vdoc, "does not match"},
		{"non-canonical version key", func(t *testing.T, root string) {
			replaceIn(t, filepath.Join(root, fooDir+"index.json"), `"1.1.0"`, `"1.1"`)
		}, fooDir + "index.json", "not canonical"},
		{"kept signature tampered", func(t *testing.T, root string) {
			write(t, filepath.Join(root, fooDir+"terraform-provider-foo_1.0.0_SHA256SUMS.sig"), "signed-by:evil")
		}, fooDir + "terraform-provider-foo_1.0.0_SHA256SUMS.sig", "does not verify"},
		{"archive replaced by another signed one", func(t *testing.T, root string) {
			other, err := os.ReadFile(filepath.Join(root, fooDir+"terraform-provider-foo_1.1.0_linux_amd64.zip"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(root, archive), string(other))
		}, vdoc, "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := builtTree(t)
			tt.corrupt(t, h.root)
			r := verifyTree(t, h.root)
			found := false
			for _, p := range r.Problems {
				if (p.Path == tt.wantPath || strings.HasSuffix(p.Path, tt.wantPath)) && strings.Contains(p.Message, tt.wantMsg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem at %s containing %q; problems: %v", tt.wantPath, tt.wantMsg, r.Problems)
			}
		})
	}
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	write(t, path, string(data))
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	write(t, path, strings.Replace(string(data), old, new, 1))
}
