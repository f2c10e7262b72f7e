package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// CatalogChange pins one change record in a signed catalog
// (Catalog.Changes): its path and the SHA-256 of its bytes.
type CatalogChange struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// pinChanges returns the change records a catalog signed now pins: every
// record the change index lists, each at the digest an earlier signed
// catalog pinned it at if it did (a record edited since keeps its old
// pin, and stays a problem for verify), otherwise at the digest the index
// gives. A pin of a record the index no longer lists is dropped when the
// index is full and the record older than all it lists (it aged out);
// otherwise it stays, and so does the problem. Sorted by path: by time,
// then digest.
//
// An index that cannot be read changes no pin: the warning says so, and
// verify reports the pinned records the index no longer lists.
func (t *Tree) pinChanges(ctx context.Context, old []CatalogChange) (pins []CatalogChange, warning string, err error) {
	data, err := t.readDoc(ctx, ChangeIndexPath, MaxChangeIndexBytes)
	if err != nil {
		return nil, "", fmt.Errorf("pin the change records in %s: %w", CatalogPath, err)
	}
	idx := ChangeIndex{Format: ChangeFormat}
	if data != nil {
		if idx, err = DecodeChangeIndex(data); err != nil {
			return old, fmt.Sprintf("%s keeps the change records it pinned before: %v (restore it, or delete it for the next run that records a change to write a new one)", CatalogPath, err), nil
		}
	}
	pinned := map[string]string{}
	for _, p := range old {
		pinned[p.Path] = p.SHA256
	}
	var out []CatalogChange
	listed := map[string]bool{}
	for _, e := range idx.Records {
		listed[e.Path] = true
		sum, ok := pinned[e.Path]
		if !ok {
			sum = e.SHA256
		}
		out = append(out, CatalogChange{Path: e.Path, SHA256: sum})
	}
	for _, p := range old {
		if !listed[p.Path] && !agedOut(idx, p.Path) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b CatalogChange) int { return strings.Compare(a.Path, b.Path) })
	return slices.CompactFunc(out, func(a, b CatalogChange) bool { return a.Path == b.Path }), "", nil
}

// CheckChangePins holds the tree's change records to the pins of a signed
// catalog (Catalog.Changes): each pinned record must be there with the
// digest pinned, and the change index must still list it, unless the
// index is full and the record is older than all it lists (it aged out,
// and may have been deleted). It returns the
// problems, and the paths of the records the index lists that the
// catalog does not pin: written after it was signed, vouched for by no
// signature of the catalog.
func (t *Tree) CheckChangePins(ctx context.Context, pins []CatalogChange) (problems []Problem, unpinned []string, err error) {
	idx, err := t.ReadChangeIndex(ctx)
	if err != nil {
		return nil, nil, err
	}
	listed := map[string]bool{}
	for _, e := range idx.Records {
		listed[e.Path] = true
	}
	pinned := map[string]bool{}
	for _, p := range pins {
		pinned[p.Path] = true
		gone := !listed[p.Path] && agedOut(idx, p.Path) // may be deleted, as any unlisted record
		if msg := t.checkPin(ctx, p, gone); msg != "" {
			problems = append(problems, Problem{Path: p.Path, Message: msg})
			continue
		}
		if !listed[p.Path] && !gone {
			problems = append(problems, Problem{Path: ChangeIndexPath, Message: fmt.Sprintf("the change index no longer lists %s, which the signed catalog pins", p.Path)})
		}
	}
	for _, e := range idx.Records {
		if !pinned[e.Path] {
			unpinned = append(unpinned, e.Path)
		}
	}
	slices.Sort(unpinned)
	return problems, unpinned, nil
}

// agedOut reports whether the record at rel, which idx does not list, is
// one a full index no longer lists because it is older than all it does.
func agedOut(idx ChangeIndex, rel string) bool {
	if len(idx.Records) < MaxChangeEntries {
		return false
	}
	for _, e := range idx.Records {
		if e.Path <= rel {
			return false
		}
	}
	return true
}

// checkPin says what is wrong with the record a pin names, "" if nothing;
// with mayBeGone, a record that is not there is nothing wrong.
func (t *Tree) checkPin(ctx context.Context, p CatalogChange, mayBeGone bool) string {
	if !IsChangePath(p.Path) {
		return fmt.Sprintf("the signed catalog pins %q, which is not a change record's path", p.Path)
	}
	data, err := t.r.ReadFile(ctx, p.Path, MaxChangeRecordBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) && mayBeGone:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return "the signed catalog pins this change record, but it is gone"
	case err != nil:
		return fmt.Sprintf("the signed catalog pins this change record, but it cannot be read: %v", err)
	case sha256Hex(data) != p.SHA256:
		return fmt.Sprintf("the record changed after the catalog was signed: the signed catalog pins SHA-256 %s, it is %s", p.SHA256, sha256Hex(data))
	}
	return ""
}
