package htmlcatalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/tfmirror/tfmirror/layout"
)

// generator marks the pages this package writes (see page.go's head).
const generator = `<meta name="generator" content="tfmirror">`

// ownedHead is how much of an existing page Owned reads: the marker is
// in the page's head, well within it.
const ownedHead = 8 << 10

// ForeignPageError means a tree's index.html was not written by tfmirror:
// writing the catalog page would replace someone else's page.
type ForeignPageError struct {
	Location string // the tree, as it may be shown
}

func (e *ForeignPageError) Error() string {
	return fmt.Sprintf("%s: %s was not written by tfmirror (it has no %s) and the catalog page would replace it; move it away, or publish the mirror into a directory or prefix of its own", e.Location, Path, generator)
}

// Owned says whether the tree's page may be written: there is none yet,
// or the one there is tfmirror's. Writers check it before their first
// write, so that a web root named by mistake loses nothing.
func Owned(ctx context.Context, tree *layout.Tree) error {
	rc, err := tree.Reader().Open(ctx, Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", Path, tree.Location(), err)
	}
	defer func() { _ = rc.Close() }() // read only
	head, err := io.ReadAll(io.LimitReader(rc, ownedHead))
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", Path, tree.Location(), err)
	}
	if !bytes.Contains(head, []byte(generator)) {
		return &ForeignPageError{Location: tree.Location()}
	}
	return nil
}
