package layout

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// The change records of a tree: one JSON file per run that changed the
// mirror (a build, a prune, a bundle import), under ChangesDir, named so
// that they sort by time; the index of the newest (ChangeIndexPath); and
// the Atom feed made from the index (ChangeFeedPath). Clients of the
// mirror protocols never read them: they are for people, feed readers and
// scripts following a mirror.
const (
	ChangesDir      = "changes"
	ChangeIndexPath = ChangesDir + "/index.json"
	// ChangeFeedPath is the Atom feed of the index's records, at the
	// tree's root.
	ChangeFeedPath = "changes.atom"
	// ChangeSignatureSuffix ends a record's detached ASCII-armored
	// signature, beside it, when the writer signs (--sign-key).
	ChangeSignatureSuffix = ".asc"
	// ChangeFormat is the format of the records and index this version
	// writes.
	ChangeFormat = 1
)

// Bounds on what a tree's change files may make a reader hold: a record
// over MaxChangeRecordBytes or an index over MaxChangeIndexBytes is not
// read; the index lists at most MaxChangeEntries records (older record
// files stay in the tree, unlisted), each entry at most MaxChangeLines
// lines of at most MaxChangeLineBytes bytes.
const (
	MaxChangeRecordBytes = MaxDocumentBytes
	MaxChangeIndexBytes  = 4 << 20
	MaxChangeEntries     = 200
	MaxChangeLines       = 20
	MaxChangeLineBytes   = 300
	// MaxChangeItems bounds the entries of one record, all its lists
	// together; MaxChangeTextBytes each text from outside in it (why a
	// package was refused, how a re-release differs).
	MaxChangeItems     = 20_000
	MaxChangeTextBytes = 1 << 10
)

// ChangeRecord is what one run changed in a mirror. Every list is sorted
// when the record is written, so that the same changes at the same time
// give the same bytes.
type ChangeRecord struct {
	Format int `json:"format"`
	// Time is when the run started (the command's one clock value), UTC,
	// whole seconds.
	Time time.Time `json:"time"`
	// Tool is the program and its version ("tfmirror/v1.4.0"); Command
	// the command that ran, its flags by name only (never their values).
	Tool    string `json:"tool"`
	Command string `json:"command"`
	// Added are the packages published: provider versions with their
	// new platforms, module versions.
	Added []ChangedPackage `json:"added,omitempty"`
	// Held are the versions the cool-down (min_age) held back.
	Held []ChangeHold `json:"held,omitempty"`
	// Refused are the packages that failed verification, with why.
	Refused []ChangeRefusal `json:"refused,omitempty"`
	// Pruned are the versions prune unlisted or deleted.
	Pruned []ChangedPackage `json:"pruned,omitempty"`
	// KeyChanges are releases signed by another primary key than the
	// provider's releases the mirror held.
	KeyChanges []KeyChange `json:"key_changes,omitempty"`
	// Rereleases are versions the origin now publishes with other bytes
	// (found by --recheck).
	Rereleases []Rerelease `json:"rereleases,omitempty"`
	// Advisories are the known vulnerabilities of the packages the run
	// published (with a vulnerability database).
	Advisories []ChangeAdvisory `json:"advisories,omitempty"`
	// Omitted counts the entries left out past MaxChangeItems.
	Omitted int `json:"omitted,omitempty"`
}

// ChangedPackage is a version of a provider ("registry.opentofu.org/
// hashicorp/aws") or a module ("module HOST/NAMESPACE/NAME/SYSTEM"), with
// the platforms concerned (none for a module or a whole version).
type ChangedPackage struct {
	Package   string   `json:"package"`
	Version   string   `json:"version"`
	Platforms []string `json:"platforms,omitempty"`
}

// ChangeHold is a version held back by the cool-down until Until; New
// says this run saw it for the first time.
type ChangeHold struct {
	Package   string    `json:"package"`
	Version   string    `json:"version"`
	FirstSeen time.Time `json:"first_seen"`
	Until     time.Time `json:"until"`
	New       bool      `json:"new,omitempty"`
}

// ChangeRefusal is a package refused, and why.
type ChangeRefusal struct {
	Package string `json:"package"`
	Why     string `json:"why"`
}

// KeyChange is a release whose signer differs from the key that signed
// the provider's release the mirror held (Previous). Status is the trust
// policy's decision: changed (a warning), accepted or refused.
type KeyChange struct {
	Package             string `json:"package"`
	Status              string `json:"status"`
	KeyID               string `json:"key_id"`
	Fingerprint         string `json:"fingerprint,omitempty"`
	PreviousVersion     string `json:"previous_version"`
	PreviousKeyID       string `json:"previous_key_id"`
	PreviousFingerprint string `json:"previous_fingerprint,omitempty"`
}

// Rerelease is a version the origin now publishes with other evidence
// than the mirror kept, each difference in words.
type Rerelease struct {
	Package     string   `json:"package"`
	Differences []string `json:"differences"`
}

// ChangeAdvisory names the advisories of one published package.
type ChangeAdvisory struct {
	Package string   `json:"package"` // "PROVIDER VERSION PLATFORM"
	IDs     []string `json:"ids"`
}

// Changed reports whether the record says anything changed: a hold
// counts only when new, so that a version still waiting out its
// cool-down does not make a record of every nightly build.
func (r ChangeRecord) Changed() bool {
	if len(r.Added)+len(r.Refused)+len(r.Pruned)+len(r.KeyChanges)+len(r.Rereleases)+len(r.Advisories) > 0 {
		return true
	}
	return slices.ContainsFunc(r.Held, func(h ChangeHold) bool { return h.New })
}

// normalize sorts every list and sets the format and the time's form.
func (r *ChangeRecord) normalize() {
	r.Format = ChangeFormat
	r.Time = r.Time.UTC().Truncate(time.Second)
	byPackage := func(a, b ChangedPackage) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Version, b.Version))
	}
	for _, list := range [][]ChangedPackage{r.Added, r.Pruned} {
		for i := range list {
			slices.Sort(list[i].Platforms)
		}
		slices.SortFunc(list, byPackage)
	}
	slices.SortFunc(r.Held, func(a, b ChangeHold) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Version, b.Version))
	})
	slices.SortFunc(r.Refused, func(a, b ChangeRefusal) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Why, b.Why))
	})
	slices.SortFunc(r.KeyChanges, func(a, b KeyChange) int { return strings.Compare(a.Package, b.Package) })
	slices.SortFunc(r.Rereleases, func(a, b Rerelease) int { return strings.Compare(a.Package, b.Package) })
	for i := range r.Advisories {
		slices.Sort(r.Advisories[i].IDs)
	}
	slices.SortFunc(r.Advisories, func(a, b ChangeAdvisory) int { return strings.Compare(a.Package, b.Package) })
	r.bound()
}

// bound keeps the first MaxChangeItems entries of the record, all lists
// together in the order of their weight (key changes first, advisories
// last), counting the others in Omitted, and clips each text from
// outside to MaxChangeTextBytes: a cold build of a huge mirror still
// writes a record a reader takes.
func (r *ChangeRecord) bound() {
	left := MaxChangeItems
	keep := func(n int) int {
		k := min(n, left)
		left -= k
		r.Omitted += n - k
		return k
	}
	r.KeyChanges = r.KeyChanges[:keep(len(r.KeyChanges))]
	r.Rereleases = r.Rereleases[:keep(len(r.Rereleases))]
	r.Refused = r.Refused[:keep(len(r.Refused))]
	r.Added = r.Added[:keep(len(r.Added))]
	r.Pruned = r.Pruned[:keep(len(r.Pruned))]
	r.Held = r.Held[:keep(len(r.Held))]
	r.Advisories = r.Advisories[:keep(len(r.Advisories))]
	for i := range r.Refused {
		r.Refused[i].Why = excerpt.Clip(r.Refused[i].Why, MaxChangeTextBytes)
	}
	for i := range r.Rereleases {
		d := r.Rereleases[i].Differences
		d = d[:min(len(d), MaxChangeLines)]
		for j := range d {
			d[j] = excerpt.Clip(d[j], MaxChangeTextBytes)
		}
		r.Rereleases[i].Differences = d
	}
}

// Summary says in one line how much changed.
func (r ChangeRecord) Summary() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(len(r.Added), "added")
	add(len(r.Pruned), "pruned")
	add(len(r.Held), "held back")
	add(len(r.Refused), "refused")
	add(len(r.KeyChanges), "key changes")
	add(len(r.Rereleases), "re-released")
	add(len(r.Advisories), "with advisories")
	add(r.Omitted, "more left out")
	if len(parts) == 0 {
		return r.Command
	}
	return r.Command + ": " + strings.Join(parts, ", ")
}

// Lines say what changed, one item a line, at most MaxChangeLines (the
// last says how many more there are).
func (r ChangeRecord) Lines() []string {
	var out []string
	pkg := func(p ChangedPackage) string {
		s := p.Package + " " + p.Version
		if len(p.Platforms) > 0 {
			s += " (" + strings.Join(p.Platforms, ", ") + ")"
		}
		return s
	}
	for _, k := range r.KeyChanges {
		out = append(out, fmt.Sprintf("key change (%s): %s signed by %s, where %s was signed by %s", k.Status, k.Package, keyName(k.KeyID, k.Fingerprint), k.PreviousVersion, keyName(k.PreviousKeyID, k.PreviousFingerprint)))
	}
	for _, x := range r.Rereleases {
		out = append(out, "re-released: "+x.Package+": "+strings.Join(x.Differences, "; "))
	}
	for _, x := range r.Refused {
		out = append(out, "refused: "+x.Package+": "+x.Why)
	}
	for _, p := range r.Added {
		out = append(out, "added: "+pkg(p))
	}
	for _, p := range r.Pruned {
		out = append(out, "pruned: "+pkg(p))
	}
	for _, h := range r.Held {
		out = append(out, fmt.Sprintf("held back until %s: %s %s", h.Until.UTC().Format(time.RFC3339), h.Package, h.Version))
	}
	for _, a := range r.Advisories {
		out = append(out, "advisories: "+a.Package+": "+strings.Join(a.IDs, ", "))
	}
	for i := range out {
		out[i] = excerpt.Clip(out[i], MaxChangeLineBytes)
	}
	if len(out) > MaxChangeLines {
		more := len(out) - (MaxChangeLines - 1)
		out = append(out[:MaxChangeLines-1], fmt.Sprintf("and %d more (see the record)", more))
	}
	return out
}

func keyName(id, fingerprint string) string {
	if fingerprint == "" {
		return "key " + id
	}
	return "key " + id + " (fingerprint " + fingerprint + ")"
}

// ChangeIndex is the content of changes/index.json: the newest records
// first, at most MaxChangeEntries.
type ChangeIndex struct {
	Format int `json:"format"`
	// Feed is the feed's id: set by the first record the index listed,
	// then kept.
	Feed    string        `json:"feed"`
	Records []ChangeEntry `json:"records"`
}

// ChangeEntry is one record as the index lists it: enough for the feed
// and the catalog page, which read no record.
type ChangeEntry struct {
	Path string    `json:"path"` // relative to the tree's root
	Time time.Time `json:"time"`
	// SHA256 is the record's digest (hex): the feed entry's id.
	SHA256  string   `json:"sha256"`
	Signed  bool     `json:"signed,omitempty"`
	Summary string   `json:"summary"`
	Lines   []string `json:"lines,omitempty"`
}

// recordName matches the path of a record tfmirror writes.
var recordName = regexp.MustCompile(`^changes/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{6}Z-[0-9a-f]{12}\.json$`)

// ChangePath is where a record with these bytes, made at t, is kept: its
// time, then the start of its digest.
func ChangePath(t time.Time, data []byte) string {
	return ChangesDir + "/" + t.UTC().Format("2006-01-02T150405Z") + "-" + sha256Hex(data)[:12] + ".json"
}

// IsChangePath reports whether rel is a record's path as ChangePath makes
// them.
func IsChangePath(rel string) bool { return recordName.MatchString(rel) }

// EncodeChangeRecord gives the record's bytes, its lists sorted.
func EncodeChangeRecord(r ChangeRecord) ([]byte, error) {
	r.normalize()
	return Encode(r)
}

// DecodeChangeRecord parses a record, refusing anything but the shape
// this version writes, and a record over MaxChangeRecordBytes.
func DecodeChangeRecord(data []byte) (ChangeRecord, error) {
	var r ChangeRecord
	if len(data) > MaxChangeRecordBytes {
		return r, fmt.Errorf("parse change record: larger than %d bytes", MaxChangeRecordBytes)
	}
	if err := decodeStrict(data, &r); err != nil {
		return r, fmt.Errorf("parse change record: %w", err)
	}
	if r.Format != ChangeFormat || r.Time.IsZero() {
		return r, fmt.Errorf("parse change record: format %d, time %q: not a change record this version reads", r.Format, r.Time)
	}
	return r, nil
}

// DecodeChangeIndex parses changes/index.json, refusing anything but its
// shape, entries whose path is not a record's, and more than
// MaxChangeEntries entries or lines past the bounds.
func DecodeChangeIndex(data []byte) (ChangeIndex, error) {
	var idx ChangeIndex
	if len(data) > MaxChangeIndexBytes {
		return idx, fmt.Errorf("parse %s: larger than %d bytes", ChangeIndexPath, MaxChangeIndexBytes)
	}
	if err := decodeStrict(data, &idx); err != nil {
		return idx, fmt.Errorf("parse %s: %w", ChangeIndexPath, err)
	}
	if idx.Format != ChangeFormat || len(idx.Records) > MaxChangeEntries {
		return ChangeIndex{}, fmt.Errorf("parse %s: format %d with %d records: not an index this version reads (at most %d records)", ChangeIndexPath, idx.Format, len(idx.Records), MaxChangeEntries)
	}
	if !feedID.MatchString(idx.Feed) {
		return ChangeIndex{}, fmt.Errorf("parse %s: its feed id %s is not urn:sha256: and a digest", ChangeIndexPath, excerpt.Quote(idx.Feed))
	}
	for _, e := range idx.Records {
		if err := e.check(); err != nil {
			return ChangeIndex{}, fmt.Errorf("parse %s: %w", ChangeIndexPath, err)
		}
	}
	return idx, nil
}

var (
	hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)
	feedID    = regexp.MustCompile(`^urn:sha256:[0-9a-f]{64}$`)
)

// check refuses an entry that names no record, or says too much.
func (e ChangeEntry) check() error {
	switch {
	case !IsChangePath(e.Path):
		return fmt.Errorf("entry %s is not the path of a change record", excerpt.Quote(e.Path))
	case !hexDigest.MatchString(e.SHA256):
		return fmt.Errorf("entry %s has no sha256 digest", e.Path)
	case len(e.Lines) > MaxChangeLines || len(e.Summary) > MaxChangeLineBytes:
		return fmt.Errorf("entry %s says more than the index holds", e.Path)
	}
	for _, l := range e.Lines {
		if len(l) > MaxChangeLineBytes {
			return fmt.Errorf("entry %s has a line longer than %d bytes", e.Path, MaxChangeLineBytes)
		}
	}
	return nil
}

// ReadChangeIndex returns the tree's index of change records, empty when
// it has none.
func (t *Tree) ReadChangeIndex(ctx context.Context) (ChangeIndex, error) {
	data, err := t.readDoc(ctx, ChangeIndexPath, MaxChangeIndexBytes)
	if err != nil || data == nil {
		return ChangeIndex{Format: ChangeFormat}, err
	}
	return DecodeChangeIndex(data)
}

// ChangeReport says what RecordChange wrote.
type ChangeReport struct {
	// Path is the record's path; "" when nothing changed and nothing
	// was written.
	Path   string
	Signed bool
	// Warning says why an index the tree held was replaced rather than
	// added to (it could not be read).
	Warning string
}

// RecordChange writes the record of a run that changed the tree, in this
// order: the record, its signature (with a sealer), the index listing it
// first, then the Atom feed. A record that says nothing changed
// (ChangeRecord.Changed) writes nothing. An index the tree holds that
// cannot be read (damaged, or written by hand) is replaced by one
// listing this record, which the report's warning says. Another writer
// changing the index meanwhile makes it read and merge again.
func (t *Tree) RecordChange(ctx context.Context, r ChangeRecord, s Sealer) (ChangeReport, error) {
	var report ChangeReport
	if !r.Changed() {
		return report, nil
	}
	if t.s == nil {
		return report, fmt.Errorf("record the changes into %s: %w", t.Location(), ErrReadOnly)
	}
	data, err := EncodeChangeRecord(r)
	if err != nil {
		return report, err
	}
	if len(data) > MaxChangeRecordBytes {
		return report, fmt.Errorf("the change record would be larger than %d bytes", MaxChangeRecordBytes)
	}
	r.normalize()
	rel := ChangePath(r.Time, data)
	if err := t.apply(ctx, write{rel: rel, kind: KindFile, content: Content{Data: data}}); err != nil {
		return report, err
	}
	report.Path = rel
	if s != nil {
		sig, err := s.SignArmored(data)
		if err != nil {
			return report, fmt.Errorf("sign %s of %s: %w", rel, t.Location(), err)
		}
		if err := t.apply(ctx, write{rel: rel + ChangeSignatureSuffix, kind: KindFile, content: Content{Data: sig}}); err != nil {
			return report, err
		}
		report.Signed = true
	}
	entry := ChangeEntry{Path: rel, Time: r.Time, SHA256: sha256Hex(data), Signed: report.Signed, Summary: excerpt.Clip(r.Summary(), MaxChangeLineBytes), Lines: r.Lines()}
	idx, err := t.addChanges(ctx, []ChangeEntry{entry}, &report)
	if err != nil {
		return report, err
	}
	return report, t.writeFeed(ctx, idx)
}

// addChanges lists entries in the index by their time (newest first),
// retrying when another writer changed it meanwhile, and returns the
// index written.
func (t *Tree) addChanges(ctx context.Context, entries []ChangeEntry, report *ChangeReport) (ChangeIndex, error) {
	for attempt := 0; ; attempt++ {
		idx, err := t.mergeChanges(ctx, entries, report)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return idx, err
		}
		if err := backoff(ctx, attempt); err != nil {
			return idx, err
		}
	}
}

func (t *Tree) mergeChanges(ctx context.Context, entries []ChangeEntry, report *ChangeReport) (ChangeIndex, error) {
	idx, tag, bad, err := t.indexToMerge(ctx)
	if err != nil {
		return idx, err
	}
	old, err := Encode(idx)
	if err != nil {
		return idx, err
	}
	// An entry the index lists keeps its place.
	var records []ChangeEntry
	for _, e := range entries {
		if !slices.ContainsFunc(idx.Records, func(o ChangeEntry) bool { return o.Path == e.Path }) {
			records = append(records, e)
		}
	}
	records = append(records, idx.Records...)
	// Newest first; of one second, the entries added now first.
	slices.SortStableFunc(records, func(a, b ChangeEntry) int { return b.Time.Compare(a.Time) })
	idx = ChangeIndex{Format: ChangeFormat, Feed: cmp.Or(idx.Feed, "urn:sha256:"+entries[0].SHA256), Records: records[:min(len(records), MaxChangeEntries)]}
	data, err := Encode(idx)
	if err != nil || bytes.Equal(data, old) {
		return idx, err
	}
	if err := t.apply(ctx, write{rel: ChangeIndexPath, kind: KindIndex, content: Content{Data: data}, checked: bad == nil, tag: tag}); err != nil {
		return idx, err
	}
	if bad != nil {
		report.Warning = fmt.Sprintf("%s of %s could not be read, and was replaced by a new index: %v", ChangeIndexPath, t.Location(), bad)
	}
	return idx, nil
}

// indexToMerge reads the index a new record is added to. One that is too
// large or does not parse is returned empty, with why (bad): it is
// replaced; a store that cannot be read is an error.
func (t *Tree) indexToMerge(ctx context.Context) (idx ChangeIndex, tag string, bad, err error) {
	empty := ChangeIndex{Format: ChangeFormat}
	if info, err := t.r.Stat(ctx, ChangeIndexPath); err == nil && info.Size > MaxChangeIndexBytes {
		return empty, "", fmt.Errorf("larger than %d bytes", MaxChangeIndexBytes), nil
	}
	data, tag, err := t.readTagged(ctx, ChangeIndexPath, MaxChangeIndexBytes)
	if err != nil || data == nil {
		return empty, tag, nil, err
	}
	if idx, err = DecodeChangeIndex(data); err != nil {
		return empty, tag, err, nil
	}
	return idx, tag, nil, nil
}

// writeFeed writes the Atom feed of idx, unless the tree holds it already.
func (t *Tree) writeFeed(ctx context.Context, idx ChangeIndex) error {
	feed, err := ChangeFeed(idx)
	if err != nil {
		return err
	}
	old, err := t.readDoc(ctx, ChangeFeedPath, MaxChangeIndexBytes)
	if err == nil && string(old) == string(feed) {
		return nil
	}
	return t.apply(ctx, write{rel: ChangeFeedPath, kind: KindCatalog, content: Content{Data: feed}})
}

// changeFiles adds the tree's change files to set: the index, the
// records it lists that the store holds (and their signatures), and the
// feed. An index that cannot be read is an error.
func (t *Tree) changeFiles(ctx context.Context, set fileSet) error {
	idx, err := t.ReadChangeIndex(ctx)
	if err != nil {
		return err
	}
	if len(idx.Records) == 0 {
		return nil
	}
	if err := set.add(ctx, t.r, ChangeIndexPath, KindIndex); err != nil {
		return err
	}
	for _, e := range idx.Records {
		for _, rel := range []string{e.Path, e.Path + ChangeSignatureSuffix} {
			if err := set.add(ctx, t.r, rel, KindFile); err != nil {
				return err
			}
		}
	}
	return set.add(ctx, t.r, ChangeFeedPath, KindCatalog)
}

// CheckChanges checks the tree's change files as a receiver must before
// taking them (bundle import): the index parses within its bounds, and
// every record it lists is there, within MaxChangeRecordBytes, parses,
// has the digest and time the index gives and the name ChangePath gives
// its bytes, and a signature beside it is no larger than MaxSumsBytes.
// Each problem is returned by path.
func (t *Tree) CheckChanges(ctx context.Context) map[string]error {
	return t.checkChanges(ctx, nil)
}

// CheckSignedChanges is CheckChanges that also holds the signature of
// every record the index calls signed to verify (a signature by a key the
// operator trusts): a record edited after it was signed, its digest in the
// index updated too, is a problem at its signature's path.
func (t *Tree) CheckSignedChanges(ctx context.Context, verify func(record, sig []byte) error) map[string]error {
	return t.checkChanges(ctx, verify)
}

func (t *Tree) checkChanges(ctx context.Context, verify func(record, sig []byte) error) map[string]error {
	problems := map[string]error{}
	idx, err := t.ReadChangeIndex(ctx)
	if err != nil {
		problems[ChangeIndexPath] = err
		return problems
	}
	for _, e := range idx.Records {
		data, err := t.readListedRecord(ctx, e)
		if err != nil {
			problems[e.Path] = err
		}
		sigPath := e.Path + ChangeSignatureSuffix
		if info, err := t.r.Stat(ctx, sigPath); err == nil && info.Size > MaxSumsBytes {
			problems[sigPath] = fmt.Errorf("larger than %d bytes", MaxSumsBytes)
			continue
		}
		if verify == nil || !e.Signed || data == nil {
			continue
		}
		sig, err := t.r.ReadFile(ctx, sigPath, MaxSumsBytes)
		if err == nil {
			err = verify(data, sig)
		}
		if err != nil {
			problems[sigPath] = fmt.Errorf("the change index says this record is signed, but no trusted key signed it: %w", err)
		}
	}
	return problems
}

// readListedRecord reads the record an index entry lists, checking it
// against the entry; a record that was read but fails a check comes back
// with the error, so that its signature can still be checked.
func (t *Tree) readListedRecord(ctx context.Context, e ChangeEntry) ([]byte, error) {
	data, err := t.r.ReadFile(ctx, e.Path, MaxChangeRecordBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", e.Path, err)
	}
	r, err := DecodeChangeRecord(data)
	if err != nil {
		return data, err
	}
	switch {
	case sha256Hex(data) != e.SHA256:
		return data, fmt.Errorf("the record's digest is not the one the index lists: the change index lists this record with SHA-256 %s, but it is %s", e.SHA256, sha256Hex(data))
	case ChangePath(r.Time, data) != e.Path || !r.Time.Equal(e.Time):
		return data, errors.New("the record's time or digest is not the one its name and the index give")
	}
	return data, nil
}

// ImportChanges copies the change records another tree lists (a bundle's
// staged mirror, checked with CheckChanges) into t, with their
// signatures, and lists them in t's index by their time; then rewrites
// the feed. A record t already holds under the same name is left as it
// is (names are content addresses). It returns how many entries it
// added to the index.
func (t *Tree) ImportChanges(ctx context.Context, from *Tree) (int, error) {
	if problems := from.CheckChanges(ctx); len(problems) > 0 {
		rel := slices.Sorted(maps.Keys(problems))[0]
		return 0, fmt.Errorf("%s of %s: %w", rel, from.Location(), problems[rel])
	}
	idx, err := from.ReadChangeIndex(ctx)
	if err != nil || len(idx.Records) == 0 {
		return 0, err
	}
	if t.s == nil {
		return 0, fmt.Errorf("import the change records into %s: %w", t.Location(), ErrReadOnly)
	}
	var entries []ChangeEntry
	for _, e := range idx.Records {
		if e.Signed, err = t.copyRecord(ctx, from, e); err != nil {
			return 0, fmt.Errorf("import %s: %w", e.Path, err)
		}
		entries = append(entries, e)
	}
	var report ChangeReport
	merged, err := t.addChanges(ctx, entries, &report)
	if err != nil {
		return 0, err
	}
	return len(entries), t.writeFeed(ctx, merged)
}

// copyRecord copies a checked record and its signature into t, unless t
// holds the record, and says whether t holds a signature of it.
func (t *Tree) copyRecord(ctx context.Context, from *Tree, e ChangeEntry) (bool, error) {
	sigPath := e.Path + ChangeSignatureSuffix
	if _, err := t.r.Stat(ctx, e.Path); err == nil {
		_, err := t.r.Stat(ctx, sigPath)
		return err == nil, nil
	}
	data, err := from.readListedRecord(ctx, e)
	if err != nil {
		return false, err
	}
	if err := t.apply(ctx, write{rel: e.Path, kind: KindFile, content: Content{Data: data}}); err != nil {
		return false, err
	}
	sig, err := from.r.ReadFile(ctx, sigPath, MaxSumsBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, t.apply(ctx, write{rel: sigPath, kind: KindFile, content: Content{Data: sig}})
}

// sha256Hex is the SHA-256 of data in hex, as the tree's documents name
// the files they vouch for.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
