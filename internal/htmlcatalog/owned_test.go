package htmlcatalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
)

// The page may be written where there is none or where tfmirror wrote
// the one there; someone else's page is refused, with the tree named.
func TestOwned(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := layout.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	tree := d.Tree
	if err := Owned(ctx, tree); err != nil {
		t.Fatalf("no page yet: %v", err)
	}
	if err := Write(ctx, tree, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Owned(ctx, tree); err != nil {
		t.Fatalf("tfmirror's page: %v", err)
	}
	for name, page := range map[string]string{
		"a site's page":            "<!DOCTYPE html><h1>our team's site</h1>",
		"the marker past the head": "<!DOCTYPE html>" + strings.Repeat(" ", ownedHead) + generator,
		"another generator":        `<meta name="generator" content="Hugo 0.140">`,
		"an empty file":            "",
	} {
		if err := os.WriteFile(filepath.Join(dir, Path), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Owned(ctx, tree)
		var foreign *ForeignPageError
		if !errors.As(err, &foreign) || !strings.Contains(err.Error(), dir+": index.html was not written by tfmirror") {
			t.Errorf("%s: %v, want a ForeignPageError naming the tree", name, err)
		}
	}
}
