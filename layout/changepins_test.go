package layout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// A signing seal pins every record the index lists; a later one keeps the
// digest it pinned for a record edited since (and its index entry), keeps
// the pin of a record hidden from an index that is not full, and drops
// the pin of one that aged out of a full index.
func TestPinChanges(t *testing.T) {
	_, tr := sealedStore(t)
	ctx := t.Context()
	publishSealed(t, tr, "1.0.0", "zip one")
	var paths []string
	for i := range 3 {
		report, err := tr.RecordChange(ctx, addedRecord(changeTime.Add(time.Duration(i)*time.Hour), fmt.Sprintf("1.0.%d", i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, report.Path)
	}
	if _, err := tr.SealCatalog(ctx, digestSealer{}); err != nil {
		t.Fatal(err)
	}
	c, _, err := tr.ReadCatalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := tr.ReadChangeIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []CatalogChange
	for _, e := range idx.Records {
		want = append(want, CatalogChange{Path: e.Path, SHA256: e.SHA256})
	}
	slices.SortFunc(want, func(a, b CatalogChange) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(c.Changes, want) {
		t.Fatalf("pinned %+v, want the index's %+v", c.Changes, want)
	}
	if problems, unpinned, err := tr.CheckChangePins(ctx, c.Changes); err != nil || len(problems) > 0 || len(unpinned) > 0 {
		t.Fatalf("CheckChangePins: %v, %v, %v; want nothing", problems, unpinned, err)
	}

	// The index edited without the key: the first record's digest
	// changed, the second no longer listed.
	edited := idx
	edited.Records = slices.Clone(idx.Records)
	firstPin := c.Changes[0]
	hidden := c.Changes[1]
	var kept []ChangeEntry
	for _, e := range edited.Records {
		switch e.Path {
		case firstPin.Path:
			e.SHA256 = "00" + e.SHA256[2:]
		case hidden.Path:
			continue
		}
		kept = append(kept, e)
	}
	edited.Records = kept
	data, err := Encode(edited)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.s.Put(ctx, ChangeIndexPath, Content{Data: data}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.SealCatalog(ctx, digestSealer{}); err != nil {
		t.Fatal(err)
	}
	if c, _, err = tr.ReadCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Changes, want) {
		t.Errorf("after the index was edited, pinned %+v, want the old pins %+v", c.Changes, want)
	}
	problems, _, err := tr.CheckChangePins(ctx, c.Changes)
	if err != nil || len(problems) != 1 || problems[0].Path != ChangeIndexPath {
		t.Errorf("CheckChangePins: %+v (%v), want the hidden record only (the edited digest is the index's problem, the record is intact)", problems, err)
	}

	full := ChangeIndex{Format: ChangeFormat, Feed: idx.Feed, Records: make([]ChangeEntry, MaxChangeEntries)}
	for i := range full.Records {
		full.Records[i] = ChangeEntry{Path: fmt.Sprintf("changes/2026-12-01T%06dZ-%012x.json", i, i), SHA256: fmt.Sprintf("%064x", i),
			Time: changeTime.AddDate(0, 0, 3), Summary: "later"}
	}
	if !agedOut(full, paths[0]) || agedOut(full, "changes/2027-01-01T000000Z-x") || agedOut(ChangeIndex{}, paths[0]) {
		t.Error("agedOut: want only a record older than every entry of a full index")
	}

	// A pinned record that aged out of a full index may be deleted (as
	// any unlisted record); one still there must keep its digest.
	if data, err = Encode(full); err != nil {
		t.Fatal(err)
	}
	if err := tr.s.Put(ctx, ChangeIndexPath, Content{Data: data}); err != nil {
		t.Fatal(err)
	}
	if err := tr.s.Delete(ctx, paths[0]); err != nil {
		t.Fatal(err)
	}
	agedPins := []CatalogChange{{Path: paths[0], SHA256: want[0].SHA256}, {Path: paths[1], SHA256: "00"}}
	problems, _, err = tr.CheckChangePins(ctx, agedPins)
	if err != nil || len(problems) != 1 || problems[0].Path != paths[1] {
		t.Errorf("CheckChangePins of aged-out records: %+v (%v), want the one whose digest changed only", problems, err)
	}
}

// An index that cannot be read changes no pin: the seal keeps the pins it
// had, signs, and says why in its warning.
func TestPinChangesKeepsPinsOfAnUnreadableIndex(t *testing.T) {
	_, tr := sealedStore(t)
	ctx := t.Context()
	publishSealed(t, tr, "1.0.0", "zip one")
	if _, err := tr.RecordChange(ctx, addedRecord(changeTime, "1.0.0"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.SealCatalog(ctx, digestSealer{}); err != nil {
		t.Fatal(err)
	}
	before, _, err := tr.ReadCatalog(ctx)
	if err != nil || len(before.Changes) != 1 {
		t.Fatalf("pins %+v (%v), want one", before.Changes, err)
	}
	if err := tr.s.Put(ctx, ChangeIndexPath, Content{Data: []byte("{garbage")}); err != nil {
		t.Fatal(err)
	}
	publishSealed(t, tr, "1.1.0", "zip two") // the catalog changes: signed again
	report, err := tr.SealCatalog(ctx, digestSealer{})
	if err != nil || !report.Signed || !strings.Contains(report.Warning, "keeps the change records it pinned before") {
		t.Fatalf("SealCatalog: %+v (%v), want signed with a warning", report, err)
	}
	after, _, err := tr.ReadCatalog(ctx)
	if err != nil || !slices.Equal(after.Changes, before.Changes) {
		t.Errorf("pins %+v (%v), want the earlier %+v", after.Changes, err, before.Changes)
	}
}
