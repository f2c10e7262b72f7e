package layout

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

var changeTime = time.Date(2026, 11, 28, 14, 30, 0, 0, time.UTC)

// addedRecord is a record of one version added at t.
func addedRecord(t time.Time, version string) ChangeRecord {
	return ChangeRecord{Time: t, Tool: "tfmirror/test", Command: "tfmirror build --out", Added: []ChangedPackage{
		{Package: "registry.opentofu.org/hashicorp/foo", Version: version, Platforms: []string{"linux_amd64", "darwin_arm64"}},
	}}
}

func TestRecordChangeOrder(t *testing.T) {
	s, tr := sealedStore(t)
	ctx := t.Context()
	rec := addedRecord(changeTime, "1.0.0")
	rec.KeyChanges = []KeyChange{{Package: "registry.opentofu.org/hashicorp/foo 1.0.0", Status: "changed", KeyID: "BBBB", Fingerprint: "B1", PreviousVersion: "0.9.0", PreviousKeyID: "AAAA", PreviousFingerprint: "A1"}}
	report, err := tr.RecordChange(ctx, rec, digestSealer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"put " + report.Path, "put " + report.Path + ChangeSignatureSuffix, "put " + ChangeIndexPath, "put " + ChangeFeedPath}
	if got := s.take(); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if !IsChangePath(report.Path) || !strings.HasPrefix(report.Path, "changes/2026-11-28T143000Z-") || !report.Signed {
		t.Fatalf("report %+v", report)
	}
	data, err := tr.Reader().ReadFile(ctx, report.Path, MaxChangeRecordBytes)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted lists: the platforms in the order of their names.
	if !bytes.Contains(data, []byte(`"darwin_arm64",`)) || !bytes.Contains(data, []byte(`"fingerprint": "B1"`)) || !bytes.Contains(data, []byte(`"previous_fingerprint": "A1"`)) {
		t.Errorf("record:\n%s", data)
	}
	if sig, _ := tr.Reader().ReadFile(ctx, report.Path+ChangeSignatureSuffix, MaxSumsBytes); !(digestSealer{}).Signs(data, sig) {
		t.Error("the signature is not of the record's bytes")
	}

	// The same changes at the same time: the same bytes, in another tree
	// too, with the platforms given in another order.
	_, other := sealedStore(t)
	rec2 := addedRecord(changeTime, "1.0.0")
	slices.Reverse(rec2.Added[0].Platforms)
	rec2.KeyChanges = rec.KeyChanges
	report2, err := other.RecordChange(ctx, rec2, nil)
	if err != nil || report2.Path != report.Path {
		t.Fatalf("the same record elsewhere: %+v, %v; want %s", report2, err, report.Path)
	}

	// Writing it again lists it once.
	if _, err := tr.RecordChange(ctx, rec, digestSealer{}); err != nil {
		t.Fatal(err)
	}
	idx, err := tr.ReadChangeIndex(ctx)
	if err != nil || len(idx.Records) != 1 || idx.Records[0].Path != report.Path || !idx.Records[0].Signed {
		t.Fatalf("index %+v, %v", idx, err)
	}
	sum := sha256.Sum256(data)
	if idx.Records[0].SHA256 != hex.EncodeToString(sum[:]) || idx.Feed != "urn:sha256:"+idx.Records[0].SHA256 {
		t.Errorf("index entry %+v, feed %q", idx.Records[0], idx.Feed)
	}
}

func TestRecordChangeNothingChanged(t *testing.T) {
	s, tr := sealedStore(t)
	// A version still waiting out its cool-down is not a change.
	rec := ChangeRecord{Time: changeTime, Command: "tfmirror build", Held: []ChangeHold{{Package: "p", Version: "1.0.0", FirstSeen: changeTime.Add(-time.Hour), Until: changeTime.Add(time.Hour)}}}
	report, err := tr.RecordChange(t.Context(), rec, digestSealer{})
	if err != nil || report.Path != "" {
		t.Fatalf("RecordChange = %+v, %v", report, err)
	}
	if got := s.take(); len(got) != 0 {
		t.Errorf("a record of nothing wrote %q", got)
	}
	// The same hold seen first by this run is.
	rec.Held[0].New = true
	if report, err := tr.RecordChange(t.Context(), rec, nil); err != nil || report.Path == "" {
		t.Fatalf("a new hold: %+v, %v", report, err)
	}
}

func TestChangeIndexBounded(t *testing.T) {
	_, tr := sealedStore(t)
	ctx := t.Context()
	n := MaxChangeEntries + 5
	var paths []string
	// Written out of time order: the index lists them newest first.
	for i := range n {
		at := changeTime.Add(time.Duration((i*7)%n) * time.Minute)
		report, err := tr.RecordChange(ctx, addedRecord(at, fmt.Sprintf("1.0.%d", i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, report.Path)
	}
	idx, err := tr.ReadChangeIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Records) != MaxChangeEntries {
		t.Fatalf("the index lists %d records, want %d", len(idx.Records), MaxChangeEntries)
	}
	if !slices.IsSortedFunc(idx.Records, func(a, b ChangeEntry) int { return b.Time.Compare(a.Time) }) {
		t.Error("the index is not newest first")
	}
	if newest := changeTime.Add(time.Duration(n-1) * time.Minute); !idx.Records[0].Time.Equal(newest) {
		t.Errorf("newest entry at %s, want %s", idx.Records[0].Time, newest)
	}
	// The records no longer listed stay in the tree.
	for _, p := range paths {
		if _, err := tr.Reader().Stat(ctx, p); err != nil {
			t.Errorf("record %s: %v", p, err)
		}
	}
	feed, err := tr.Reader().ReadFile(ctx, ChangeFeedPath, MaxChangeIndexBytes)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := gofeed.NewParser().ParseString(string(feed))
	if err != nil {
		t.Fatalf("the feed does not parse: %v\n%s", err, feed)
	}
	if len(parsed.Items) != FeedEntries || parsed.Items[0].GUID != "urn:sha256:"+idx.Records[0].SHA256 {
		t.Errorf("feed of %d items, first %+v", len(parsed.Items), parsed.Items[0])
	}
}

func TestChangeFeedParses(t *testing.T) {
	_, tr := sealedStore(t)
	ctx := t.Context()
	first := addedRecord(changeTime, "1.0.0")
	second := ChangeRecord{Time: changeTime.Add(time.Hour), Command: "tfmirror prune", Pruned: []ChangedPackage{{Package: "registry.opentofu.org/hashicorp/foo", Version: "0.1.0"}},
		Refused: []ChangeRefusal{{Package: "x 1.0.0 linux_amd64", Why: `checksum <mismatch> & "quotes"` + "\x01"}}}
	r1, err := tr.RecordChange(ctx, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := tr.RecordChange(ctx, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	feed, err := tr.Reader().ReadFile(ctx, ChangeFeedPath, MaxChangeIndexBytes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gofeed.NewParser().ParseString(string(feed))
	if err != nil {
		t.Fatalf("the feed does not parse: %v\n%s", err, feed)
	}
	if f.FeedType != "atom" || len(f.Items) != 2 {
		t.Fatalf("feed %s with %d items:\n%s", f.FeedType, len(f.Items), feed)
	}
	newest := f.Items[0]
	if newest.Link != r2.Path || newest.UpdatedParsed == nil || !newest.UpdatedParsed.Equal(changeTime.Add(time.Hour)) ||
		!strings.Contains(newest.Content, `checksum <mismatch> & "quotes"`) || !strings.Contains(newest.Title, "1 pruned, 1 refused") {
		t.Errorf("newest entry %+v", newest)
	}
	if f.Items[1].Link != r1.Path || !strings.Contains(f.Items[1].Content, "added: registry.opentofu.org/hashicorp/foo 1.0.0 (darwin_arm64, linux_amd64)") {
		t.Errorf("oldest entry %+v", f.Items[1])
	}
	if f.UpdatedParsed == nil || !f.UpdatedParsed.Equal(changeTime.Add(time.Hour)) || f.Link != "index.html" {
		t.Errorf("feed updated %v, link %q", f.UpdatedParsed, f.Link)
	}
	// The feed's id stays the first record's, whatever came after.
	idx, _ := tr.ReadChangeIndex(ctx)
	if !strings.Contains(string(feed), "<id>"+idx.Feed+"</id>") || idx.Feed != "urn:sha256:"+idx.Records[1].SHA256 {
		t.Errorf("feed id %q, index %+v", idx.Feed, idx)
	}
}

func TestRecordChangeHostileIndex(t *testing.T) {
	good := func(t *testing.T, tr *Tree) ChangeEntry {
		r, err := tr.RecordChange(t.Context(), addedRecord(changeTime, "0.1.0"), nil)
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := tr.ReadChangeIndex(t.Context())
		if idx.Records[0].Path != r.Path {
			t.Fatal("no entry")
		}
		return idx.Records[0]
	}
	for name, index := range map[string]func(e ChangeEntry) []byte{
		"bad JSON": func(ChangeEntry) []byte { return []byte(`{"format": 1, "records": [`) },
		"unknown key": func(ChangeEntry) []byte {
			return []byte(`{"format": 1, "feed": "urn:sha256:` + strings.Repeat("0", 64) + `", "records": [], "x": 1}`)
		},
		"other format": func(ChangeEntry) []byte {
			return []byte(`{"format": 2, "feed": "urn:sha256:` + strings.Repeat("0", 64) + `", "records": []}`)
		},
		"huge": func(ChangeEntry) []byte { return bytes.Repeat([]byte(" "), MaxChangeIndexBytes+1) },
		"odd path": func(e ChangeEntry) []byte {
			e.Path = "../../etc/passwd"
			data, _ := Encode(ChangeIndex{Format: ChangeFormat, Feed: "urn:sha256:" + e.SHA256, Records: []ChangeEntry{e}})
			return data
		},
		"long line": func(e ChangeEntry) []byte {
			e.Lines = []string{strings.Repeat("x", MaxChangeLineBytes+1)}
			data, _ := Encode(ChangeIndex{Format: ChangeFormat, Feed: "urn:sha256:" + e.SHA256, Records: []ChangeEntry{e}})
			return data
		},
		"too many": func(e ChangeEntry) []byte {
			data, _ := Encode(ChangeIndex{Format: ChangeFormat, Feed: "urn:sha256:" + e.SHA256, Records: slices.Repeat([]ChangeEntry{e}, MaxChangeEntries+1)})
			return data
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, tr := sealedStore(t)
			ctx := t.Context()
			e := good(t, tr)
			if err := s.DirStore.Put(ctx, ChangeIndexPath, Content{Data: index(e)}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.ReadChangeIndex(ctx); err == nil {
				t.Fatal("ReadChangeIndex took the hostile index")
			}
			report, err := tr.RecordChange(ctx, addedRecord(changeTime.Add(time.Hour), "1.0.0"), nil)
			if err != nil || report.Warning == "" {
				t.Fatalf("RecordChange = %+v, %v; want a warning and a new index", report, err)
			}
			idx, err := tr.ReadChangeIndex(ctx)
			if err != nil || len(idx.Records) != 1 || idx.Records[0].Path != report.Path {
				t.Fatalf("index after: %+v, %v", idx, err)
			}
		})
	}

	t.Run("not a file", func(t *testing.T) {
		s, tr := sealedStore(t)
		if err := os.MkdirAll(filepath.Join(s.Root(), filepath.FromSlash(ChangeIndexPath)), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RecordChange(t.Context(), addedRecord(changeTime, "1.0.0"), nil); err == nil {
			t.Error("a directory where the index goes was replaced or ignored")
		}
	})
}

func TestCheckChanges(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, s *opsStore, rel string){
		"edited": func(t *testing.T, s *opsStore, rel string) {
			data, _ := s.ReadFile(t.Context(), rel, MaxChangeRecordBytes)
			putFile(t, s, rel, bytes.Replace(data, []byte("1.0.0"), []byte("6.6.6"), 1))
		},
		"missing": func(t *testing.T, s *opsStore, rel string) {
			if err := s.DirStore.Delete(t.Context(), rel); err != nil {
				t.Fatal(err)
			}
		},
		"not JSON": func(t *testing.T, s *opsStore, rel string) { putFile(t, s, rel, []byte("<html>")) },
		"huge": func(t *testing.T, s *opsStore, rel string) {
			putFile(t, s, rel, bytes.Repeat([]byte(" "), MaxChangeRecordBytes+1))
		},
		"huge signature": func(t *testing.T, s *opsStore, rel string) {
			putFile(t, s, rel+ChangeSignatureSuffix, bytes.Repeat([]byte("x"), MaxSumsBytes+1))
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, tr := sealedStore(t)
			r, err := tr.RecordChange(t.Context(), addedRecord(changeTime, "1.0.0"), digestSealer{})
			if err != nil {
				t.Fatal(err)
			}
			if problems := tr.CheckChanges(t.Context()); len(problems) != 0 {
				t.Fatalf("problems of a good tree: %v", problems)
			}
			damage(t, s, r.Path)
			if problems := tr.CheckChanges(t.Context()); len(problems) != 1 {
				t.Errorf("problems: %v", problems)
			}
			dest, into := sealedStore(t)
			if _, err := into.ImportChanges(t.Context(), tr); err == nil {
				t.Error("ImportChanges took a damaged record")
			}
			if files := listDir(t, dest.Root()); slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, ChangesDir) }) {
				t.Errorf("ImportChanges wrote %q", files)
			}
		})
	}
}

func putFile(t *testing.T, s *opsStore, rel string, data []byte) {
	t.Helper()
	if err := s.DirStore.Put(t.Context(), rel, Content{Data: data}); err != nil {
		t.Fatal(err)
	}
}

func TestImportChanges(t *testing.T) {
	ctx := t.Context()
	_, from := sealedStore(t)
	old, err := from.RecordChange(ctx, addedRecord(changeTime, "1.0.0"), digestSealer{})
	if err != nil {
		t.Fatal(err)
	}
	s, into := sealedStore(t)
	mine, err := into.RecordChange(ctx, addedRecord(changeTime.Add(time.Hour), "2.0.0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.take()
	n, err := into.ImportChanges(ctx, from)
	if err != nil || n != 1 {
		t.Fatalf("ImportChanges = %d, %v", n, err)
	}
	want := []string{"put " + old.Path, "put " + old.Path + ChangeSignatureSuffix, "put " + ChangeIndexPath, "put " + ChangeFeedPath}
	if got := s.take(); !slices.Equal(got, want) {
		t.Errorf("writes %q, want %q", got, want)
	}
	idx, err := into.ReadChangeIndex(ctx)
	if err != nil || len(idx.Records) != 2 || idx.Records[0].Path != mine.Path || idx.Records[1].Path != old.Path {
		t.Fatalf("index %+v, %v", idx, err)
	}
	if problems := into.CheckChanges(ctx); len(problems) != 0 {
		t.Errorf("problems after the import: %v", problems)
	}
	// Importing again writes only what differs: the index, unchanged
	// but rewritten, and no record.
	if _, err := into.ImportChanges(ctx, from); err != nil {
		t.Fatal(err)
	}
	if got := s.take(); slices.Contains(got, "put "+old.Path) {
		t.Errorf("the record was written again: %q", got)
	}
}

func TestDecodeDocumentChanges(t *testing.T) {
	_, tr := sealedStore(t)
	r, err := tr.RecordChange(t.Context(), addedRecord(changeTime, "1.0.0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{r.Path, ChangeIndexPath} {
		data, err := tr.Reader().ReadFile(t.Context(), rel, MaxDocumentBytes)
		if err != nil {
			t.Fatal(err)
		}
		v, err := DecodeDocument(rel, data)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if enc, _ := Encode(v); !bytes.Equal(enc, data) {
			t.Errorf("%s does not encode back to its bytes", rel)
		}
	}
	files, _, err := tr.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if want := []string{ChangeFeedPath, r.Path, ChangeIndexPath}; !slices.Equal(got, want) {
		t.Errorf("Files = %q, want %q", got, want)
	}
}

func TestChangeRecordBounded(t *testing.T) {
	_, tr := sealedStore(t)
	rec := ChangeRecord{Time: changeTime, Command: "tfmirror build", Refused: []ChangeRefusal{{Package: "p 1.0.0 linux_amd64", Why: strings.Repeat("x", 10*MaxChangeTextBytes)}}}
	for i := range MaxChangeItems + 10 {
		rec.Added = append(rec.Added, ChangedPackage{Package: "registry.opentofu.org/hashicorp/foo", Version: fmt.Sprintf("1.0.%d", i), Platforms: []string{"linux_amd64"}})
	}
	report, err := tr.RecordChange(t.Context(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.Reader().ReadFile(t.Context(), report.Path, MaxChangeRecordBytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeChangeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Refused) != 1 || len(got.Refused[0].Why) > MaxChangeTextBytes || len(got.Added) != MaxChangeItems-1 || got.Omitted != 11 {
		t.Errorf("record of %d bytes: %d refused (why of %d bytes), %d added, %d omitted", len(data), len(got.Refused), len(got.Refused[0].Why), len(got.Added), got.Omitted)
	}
	idx, _ := tr.ReadChangeIndex(t.Context())
	if !strings.Contains(idx.Records[0].Summary, "11 more left out") {
		t.Errorf("summary %q", idx.Records[0].Summary)
	}
}
