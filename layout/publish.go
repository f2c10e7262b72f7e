package layout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/syncx"
)

// Policy decides what a publication does where the tree already holds
// other content than it brings. It is the one merge rule of a tree: build
// and bundle import differ only in the policy they pass.
//
// Under both policies documents are merged: index.json keeps every version
// and gains the new ones, <version>.json keeps every platform and gains or
// updates the new ones, catalog.json keeps every provider.
type Policy int

const (
	// Refuse makes every difference a conflict: an archive, SHA256SUMS or
	// signature with other bytes, a release recorded as verified by
	// another key, a platform recorded with another package, an archive
	// listed under another URL. Hashes listed for the same bytes are
	// united. The same signing key kept in another form (re-issued) is
	// not a difference: the destination keeps its own.
	// Bundle import uses it: a difference means one side was tampered with
	// or re-released, and a person must decide.
	Refuse Policy = iota
	// Repair lets content verified just now replace what the tree holds:
	// a damaged archive (one whose bytes do not match the zh: its
	// <version>.json lists), the kept origin files, and the platform's
	// entries. An intact archive with other bytes (re-released upstream)
	// is still a conflict: tfmirror never silently replaces a package
	// clients may have locked. The build uses it.
	Repair
)

// ConflictError refuses a publication: the tree holds content the policy
// does not let it replace. Nothing was written.
type ConflictError struct {
	Conflicts []Conflict
}

// Conflict is one file a publication may not write.
type Conflict struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d conflicts with what the mirror already holds:", len(e.Conflicts))
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  %s: %s", c.Path, c.Message)
	}
	return b.String()
}

// PublishReport counts what a publication did.
type PublishReport struct {
	Written   int // files created or replaced
	Unchanged int // files that already held what the publication brings
}

// PublishAll makes releases visible in publish order: every archive and
// kept origin file first, then provenance records, then <version>.json,
// then index.json, and catalog.json last, each write atomic. Everything is
// planned (every existing document read and merged) before the first
// write, so a conflict or a document the tree cannot understand refuses
// the whole publication with the tree as it was.
//
// On a Conditional store other writers may publish at the same time:
// documents are written only if unchanged since they were read, archives
// only where none exists, and when another writer got there first the
// publication is planned again from what the store now holds (what it
// already wrote is then found unchanged).
func (t *Tree) PublishAll(ctx context.Context, policy Policy, releases []Release) (PublishReport, error) {
	return t.PublishMirror(ctx, policy, releases, nil)
}

// PublishMirror is PublishAll and PublishModules in one publication:
// everything is planned before the first write, so a conflict in either
// refuses both (bundle import).
func (t *Tree) PublishMirror(ctx context.Context, policy Policy, releases []Release, modules []ModuleRelease) (PublishReport, error) {
	if t.s == nil {
		return PublishReport{}, fmt.Errorf("publish into %s: %w", t.Location(), ErrReadOnly)
	}
	var names catalogNames
	for _, r := range releases {
		names.providers = append(names.providers, r.Provider.String())
	}
	for _, r := range modules {
		names.modules = append(names.modules, r.Module.String())
	}
	plan := func(pl *planner) error {
		for _, r := range releases {
			if err := pl.release(ctx, r); err != nil {
				return err
			}
		}
		for _, r := range modules {
			if err := pl.module(ctx, r); err != nil {
				return err
			}
		}
		return nil
	}
	return t.publish(ctx, policy, names, plan)
}

// catalogNames are what a publication adds to catalog.json.
type catalogNames struct {
	providers []string
	modules   []string
}

// publish plans with plan and writes, again while other writers get in
// the way, holding the in-process locks of every provider and module the
// publication touches.
func (t *Tree) publish(ctx context.Context, policy Policy, names catalogNames, plan func(*planner) error) (PublishReport, error) {
	defer t.lockNames(append(slices.Clone(names.providers), names.modules...))()
	var total PublishReport
	for attempt := 0; ; attempt++ {
		report, err := t.publishOnce(ctx, policy, names, plan)
		total.Written += report.Written
		total.Unchanged = max(report.Unchanged-(total.Written-report.Written), 0)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return total, err
		}
		if err := backoff(ctx, attempt); err != nil {
			return total, err
		}
	}
}

// maxAttempts bounds how often a publication is planned again because
// other writers changed what it read.
const maxAttempts = 10

// backoff waits before a publication's next attempt: a random time below
// a bound that doubles with each attempt, up to two seconds, so that
// writers that collided spread out.
func backoff(ctx context.Context, attempt int) error {
	bound := min(25*time.Millisecond<<attempt, 2*time.Second)
	return syncx.Sleep(ctx, rand.N(bound)+time.Millisecond)
}

// publishOnce plans the publication from what the tree holds now and
// writes it.
func (t *Tree) publishOnce(ctx context.Context, policy Policy, names catalogNames, plan func(*planner) error) (PublishReport, error) {
	pl := &planner{tree: t, policy: policy, docs: map[string]*plannedDoc{}}
	if err := plan(pl); err != nil {
		return PublishReport{}, err
	}
	if len(pl.conflicts) > 0 {
		return PublishReport{}, &ConflictError{Conflicts: pl.conflicts}
	}
	writes, err := pl.documentWrites()
	if err != nil {
		return PublishReport{}, err
	}
	writes = append(pl.files, writes...)
	slices.SortStableFunc(writes, func(a, b write) int { return int(a.kind) - int(b.kind) })
	report := PublishReport{Unchanged: pl.unchanged}
	for len(writes) > 0 {
		n := 1
		for n < len(writes) && writes[n].kind == writes[0].kind {
			n++
		}
		made, err := t.applyKind(ctx, writes[:n])
		report.Written += made
		if err != nil {
			return report, err
		}
		writes = writes[n:]
	}
	changed, err := t.addToCatalog(ctx, names)
	if changed {
		report.Written++
	} else if err == nil {
		report.Unchanged++
	}
	return report, err
}

// lockNames serializes publications per provider and module, taking the
// locks in one order so two publications of several cannot deadlock.
func (t *Tree) lockNames(names []string) func() {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	unlocks := make([]func(), 0, len(names))
	for _, n := range names {
		unlocks = append(unlocks, t.names.Lock(n))
	}
	return func() {
		for _, u := range slices.Backward(unlocks) {
			u()
		}
	}
}

// write is one planned change of the tree.
type write struct {
	rel     string
	kind    FileKind
	content Content
	delete  bool
	// checked makes the write conditional, on a Conditional store: it
	// succeeds only if rel still has tag ("" for: does not exist).
	checked bool
	tag     string
}

// maxWrites bounds the writes in flight into one tree, all its
// publications together: the uploads of a release's archives into a bucket
// go up together, and many releases publishing at once do not multiply
// them.
const maxWrites = 8

// applyKind makes writes of one kind, several at once: none is visible to
// clients before the writes of the next kind (the documents that list
// them), so their order among themselves does not matter, and publish
// order holds as long as every one is done before the next kind starts.
// Each write holds one of the tree's places (maxWrites). It returns how
// many it made; after a failure the others are stopped.
func (t *Tree) applyKind(ctx context.Context, writes []write) (int, error) {
	var written atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxWrites)
	for _, w := range writes {
		g.Go(func() error {
			if err := t.applyHeld(gctx, w); err != nil {
				return err
			}
			written.Add(1)
			return nil
		})
	}
	err := g.Wait()
	return int(written.Load()), err
}

// applyHeld makes a write once it holds one of the tree's places.
func (t *Tree) applyHeld(ctx context.Context, w write) error {
	select {
	case t.writing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.writing }()
	return t.apply(ctx, w)
}

func (t *Tree) apply(ctx context.Context, w write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.delete {
		return t.s.Delete(ctx, w.rel)
	}
	var err error
	if c, ok := t.s.(Conditional); ok && w.checked {
		err = c.PutIf(ctx, w.rel, w.content, w.tag)
	} else {
		err = t.s.Put(ctx, w.rel, w.content)
	}
	if err != nil {
		return fmt.Errorf("publish %s: %w", w.rel, err)
	}
	return nil
}

// readTagged reads a document of the tree with its tag on a Conditional
// store; missing is (nil, "", nil).
func (t *Tree) readTagged(ctx context.Context, rel string, limit int64) ([]byte, string, error) {
	c, ok := t.r.(Conditional)
	if !ok {
		data, err := t.readDoc(ctx, rel, limit)
		return data, "", err
	}
	data, tag, err := c.ReadTagged(ctx, rel, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", rel, err)
	}
	return data, tag, nil
}

// plannedDoc is a document as the publication will leave it.
type plannedDoc struct {
	rel      string
	kind     FileKind
	existing []byte // nil when the tree lacks it
	tag      string // of existing, on a Conditional store
	value    any    // *Index, *VersionDoc or *Provenance
}

type planner struct {
	tree      *Tree
	policy    Policy
	docs      map[string]*plannedDoc
	order     []string // document paths, in the order first planned
	files     []write
	unchanged int
	conflicts []Conflict
}

func (pl *planner) conflict(rel, format string, args ...any) {
	pl.conflicts = append(pl.conflicts, Conflict{Path: rel, Message: fmt.Sprintf(format, args...)})
}

// release plans one release's files and merges it into its documents.
func (pl *planner) release(ctx context.Context, r Release) error {
	doc, err := pl.versionDoc(ctx, r.Provider, r.Version)
	if err != nil {
		return err
	}
	for _, a := range r.Archives {
		replaced, err := pl.archive(ctx, r, a, doc)
		if err != nil {
			return err
		}
		pl.listArchive(r, a, doc, replaced)
	}
	if r.Record != nil {
		if err := pl.record(ctx, r); err != nil {
			return err
		}
	}
	idx, err := pl.index(ctx, r.Provider)
	if err != nil {
		return err
	}
	idx.Versions[r.Version.String()] = struct{}{}
	return nil
}

// listArchive sets a platform's entry in <version>.json.
func (pl *planner) listArchive(r Release, a Archive, doc *VersionDoc, replaced bool) {
	name := ArchiveName(r.Provider, r.Version, a.Platform)
	entry := ArchiveEntry{Hashes: sortedHashes(a.Hashes), URL: name}
	old, listed := doc.Archives[a.Platform.String()]
	switch {
	case listed && old.URL != name:
		if pl.policy == Refuse {
			pl.conflict(VersionPath(r.Provider, r.Version), "%s: the mirror lists the archive %q, the publication %q", a.Platform, old.URL, name)
		}
	case listed && !replaced && pl.policy == Refuse:
		// The same bytes: every hash either side lists is valid for them.
		entry.Hashes = sortedHashes(append(slices.Clone(old.Hashes), a.Hashes...))
	}
	doc.Archives[a.Platform.String()] = entry
}

// archive plans an archive's file. It reports whether the tree's file is
// replaced (or created).
func (pl *planner) archive(ctx context.Context, r Release, a Archive, doc *VersionDoc) (bool, error) {
	rel := ArchivePath(r.Provider, r.Version, a.Platform)
	if a.Staged == "" {
		return false, nil // already in place
	}
	if local, ok := pl.tree.LocalPath(rel); ok && same(local, a.Staged) {
		pl.unchanged++
		return false, nil
	}
	want, err := stagedDigest(a)
	if err != nil {
		return false, fmt.Errorf("publish %s: %w", rel, err)
	}
	if pl.tree.takeAhead(rel) == want {
		pl.unchanged++
		return false, nil
	}
	size := int64(-1)
	if info, err := os.Stat(a.Staged); err == nil {
		size = info.Size()
	}
	have, found, err := pl.digestOf(ctx, rel, r.VerifyExisting, size)
	if err != nil {
		return false, pl.fileWrite(rel, Content{}, err, false)
	}
	if !found {
		return true, pl.fileWrite(rel, Content{File: a.Staged, Move: a.Move, SHA256: want}, nil, true)
	}
	if have == want {
		pl.unchanged++
		return false, nil
	}
	listed := doc.Archives[a.Platform.String()]
	intact := slices.Contains(listed.Hashes, hashing.ZH(have))
	if pl.policy == Refuse || intact {
		pl.differs(rel, have, want, intact)
		return false, nil
	}
	return true, pl.fileWrite(rel, Content{File: a.Staged, Move: a.Move, SHA256: want}, nil, false)
}

// PutArchiveAhead writes a release's archive into the tree ahead of the
// publication that will list it, so that an upload into a bucket runs
// while the release's other archives still download. Nothing refers to
// the file until that publication, so clients cannot see it, and the
// publication then finds it in place. It writes only where the tree holds
// no file at all (whatever is there, the publication decides about), and
// nothing into a tree on the local filesystem, where the publication
// moves the staged file at no cost. The write holds one of the tree's
// places, as a publication's writes do.
func (t *Tree) PutArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a Archive) error {
	if _, local := t.r.(localPather); local || t.s == nil || a.Staged == "" {
		return nil
	}
	rel := ArchivePath(p, v, a.Platform)
	want, err := stagedDigest(a)
	if err != nil {
		return fmt.Errorf("publish %s: %w", rel, err)
	}
	switch _, err := t.r.Stat(ctx, rel); {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	err = t.applyHeld(ctx, write{rel: rel, kind: KindFile, content: Content{File: a.Staged, SHA256: want}, checked: true})
	switch {
	case errors.Is(err, ErrChanged):
		return nil // another writer put one there meanwhile
	case err != nil:
		return err
	}
	t.mu.Lock()
	t.ahead[rel] = want
	t.mu.Unlock()
	return nil
}

// takeAhead returns, once, the SHA-256 of the archive PutArchiveAhead
// wrote at rel (the zero digest when it wrote none there). The file was
// created under this writer's lock and nothing lists it, so only another
// writer's repair of the same release could have replaced it since, which
// asking the store now would not rule out either: that could happen just
// after the question.
func (t *Tree) takeAhead(rel string) [sha256.Size]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum := t.ahead[rel]
	delete(t.ahead, rel)
	return sum
}

// differs records the conflict of a file whose bytes differ.
func (pl *planner) differs(rel string, have, want [sha256.Size]byte, intact bool) {
	if pl.policy == Repair && intact {
		pl.conflict(rel, "the mirror already holds a verified package here (%s), but the origin now serves other bytes (%s): "+
			"tfmirror never replaces a published package; remove the version from the mirror first if the new one is right", hashing.ZH(have), hashing.ZH(want))
		return
	}
	pl.conflict(rel, "the destination already holds different bytes here (SHA-256 %x, the incoming file's is %x); "+
		"tfmirror never replaces an archive or a kept origin file: remove or rebuild it first if the incoming one is right", have, want)
}

// fileWrite plans writing a file; create makes it conditional on the
// file still not existing.
func (pl *planner) fileWrite(rel string, c Content, err error, create bool) error {
	if errors.Is(err, ErrNotRegular) {
		pl.conflict(rel, "%v", err)
		return nil
	}
	if err != nil {
		return err
	}
	pl.files = append(pl.files, write{rel: rel, kind: KindFile, content: c, checked: create})
	return nil
}

// digestOf returns the SHA-256 of a file of the tree, if it exists: the
// one the store records for a file of size bytes (any size when
// negative), or with reread, or for a file of another size, the one of
// its bytes.
func (pl *planner) digestOf(ctx context.Context, rel string, reread bool, size int64) ([sha256.Size]byte, bool, error) {
	sum, err := pl.tree.digest(ctx, rel, reread, size)
	if errors.Is(err, fs.ErrNotExist) {
		return sum, false, nil
	}
	return sum, true, err
}

// stagedDigest is the SHA-256 of a staged archive: its zh: hash when the
// caller gave one, else computed.
func stagedDigest(a Archive) ([sha256.Size]byte, error) {
	for _, h := range a.Hashes {
		if out, err := h.ZHDigest(); err == nil {
			return out, nil
		}
	}
	sum, _, err := hashing.HashFile(a.Staged)
	return sum, err
}

// origin plans a kept origin file (SHA256SUMS or its signature): nil data
// means the release has none, and a stale one is removed under Repair.
func (pl *planner) origin(ctx context.Context, rel string, data []byte) error {
	if data != nil {
		return pl.keptFile(ctx, rel, data, MaxSumsBytes)
	}
	have, _, err := pl.tree.readTagged(ctx, rel, MaxSumsBytes)
	switch {
	case err != nil:
		return err
	case have != nil && pl.policy == Repair:
		pl.files = append(pl.files, write{rel: rel, kind: KindFile, delete: true})
	}
	// Refuse: the release keeps the signature the mirror has.
	return nil
}

// keptFile plans a file kept byte for byte (a kept origin file, an
// SBOM): created where missing, replaced under Repair where it differs, a
// conflict under Refuse.
func (pl *planner) keptFile(ctx context.Context, rel string, data []byte, limit int64) error {
	have, tag, err := pl.tree.readTagged(ctx, rel, limit)
	if err != nil {
		return err
	}
	switch {
	case have == nil:
		pl.files = append(pl.files, write{rel: rel, kind: KindFile, content: Content{Data: data}, checked: true})
	case bytes.Equal(have, data):
		pl.unchanged++
	case pl.policy == Refuse:
		pl.differs(rel, sha256.Sum256(have), sha256.Sum256(data), false)
	default:
		pl.files = append(pl.files, write{rel: rel, kind: KindFile, content: Content{Data: data}, checked: true, tag: tag})
	}
	return nil
}

// mergeSums adds the lines of a release's SHA256SUMS made from the
// digests of its archives (an upstream of hashes only) to those the
// destination keeps, so platforms published by earlier builds stay
// listed. A kept document that does not parse is replaced.
func (pl *planner) mergeSums(ctx context.Context, rel string, data []byte) ([]byte, error) {
	have, _, err := pl.tree.readTagged(ctx, rel, MaxSumsBytes)
	if err != nil || have == nil {
		return data, err
	}
	kept, err := hashing.ParseSums(have)
	if err != nil {
		return data, nil
	}
	add, err := hashing.ParseSums(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	maps.Copy(kept, add)
	return kept.Format(), nil
}

// record plans a release's kept origin files and merges its provenance.
func (pl *planner) record(ctx context.Context, r Release) error {
	rec := r.Record
	sums := rec.Sums
	if rec.Provenance.HashesOnly != "" {
		var err error
		if sums, err = pl.mergeSums(ctx, SumsPath(r.Provider, r.Version), sums); err != nil {
			return err
		}
	}
	prov, found, err := pl.provenance(ctx, r.Provider, r.Version)
	if err != nil {
		return err
	}
	keepSigner := false
	if found {
		if keepSigner, err = pl.signedAlike(ctx, r, *prov); err != nil {
			return err
		}
	}
	if err := pl.origin(ctx, SumsPath(r.Provider, r.Version), sums); err != nil {
		return err
	}
	if !keepSigner {
		if err := pl.origin(ctx, SignaturePath(r.Provider, r.Version), rec.Signature); err != nil {
			return err
		}
	}
	rel := ProvenancePath(r.Provider, r.Version)
	keys := rec.Provenance.SigningKeys
	if keys == nil {
		keys = []string{}
	}
	switch {
	case keepSigner:
		// The kept signature vouches for the same SHA256SUMS: the
		// release keeps the signer it was first mirrored with.
	case pl.policy != Refuse || !found:
		prov.SetSigner(rec.Provenance, keys)
	case !prov.SameSigner(rec.Provenance):
		pl.conflict(rel, "the release was verified with other evidence in the destination (key %q, hashes only from %q, %d advertised keys) than in the publication (key %q, hashes only from %q, %d advertised keys)",
			prov.KeyID, prov.HashesOnly, len(prov.SigningKeys), rec.Provenance.KeyID, rec.Provenance.HashesOnly, len(keys))
	}
	if found {
		pl.keptStillSigned(rel, *prov, *rec)
	}
	for plat, a := range rec.Provenance.Archives {
		d, ok := prov.Archives[plat]
		if ok && !d.SamePackage(a) && pl.policy == Refuse {
			pl.conflict(rel, "%s: the destination records another package (%s) than the publication (%s)", plat, d.H1, a.H1)
		}
		prov.Archives[plat] = a.Merged(d)
	}
	return pl.sboms(ctx, r, prov)
}

// signedAlike reports whether a publication brings the very SHA256SUMS the
// destination keeps for the release, signed by another key (the origin
// re-signed it after a key rotation): the kept signature still vouches for
// every line of it, the new platforms' included, so the release keeps its
// signature and signer, and the mirror's key history stays what it was.
func (pl *planner) signedAlike(ctx context.Context, r Release, kept Provenance) (bool, error) {
	rec := r.Record
	if kept.KeyID == "" || rec.Provenance.KeyID == "" || kept.KeyID == rec.Provenance.KeyID ||
		kept.HashesOnly != "" || rec.Provenance.HashesOnly != "" || rec.Sums == nil {
		return false, nil
	}
	sums, _, err := pl.tree.readTagged(ctx, SumsPath(r.Provider, r.Version), MaxSumsBytes)
	if err != nil || !bytes.Equal(sums, rec.Sums) {
		return false, err
	}
	sig, _, err := pl.tree.readTagged(ctx, SignaturePath(r.Provider, r.Version), MaxSumsBytes)
	return err == nil && sig != nil, err
}

// keptStillSigned refuses a publication whose SHA256SUMS no longer vouch
// for a package the destination keeps of the release and the publication
// does not bring: the origin re-released the version with other bytes
// (or without that platform), and writing its SHA256SUMS, signature and
// provenance over the kept ones would leave the kept archive signed by
// nothing. It is a conflict under every policy: the release stays as it
// was.
func (pl *planner) keptStillSigned(rel string, prov Provenance, rec Record) {
	if rec.Sums == nil || rec.Provenance.HashesOnly != "" {
		return
	}
	sums, err := hashing.ParseSums(rec.Sums)
	if err != nil {
		return // refused where the sums are written
	}
	for _, plat := range slices.Sorted(maps.Keys(prov.Archives)) {
		kept := prov.Archives[plat]
		if _, brought := rec.Provenance.Archives[plat]; brought || kept.ZH == "" {
			continue
		}
		digest, listed := sums[kept.Filename]
		switch {
		case !listed:
			pl.conflict(rel, "%s: the origin's SHA256SUMS no longer lists %s, which the mirror keeps: the version was re-released at the origin", plat, kept.Filename)
		case hashing.ZH(digest) != kept.ZH:
			pl.conflict(rel, "%s: the mirror keeps %s, but the origin's SHA256SUMS now says %s: the version was re-released at the origin with other bytes", plat, kept.ZH, hashing.ZH(digest))
		}
	}
}

// sboms plans the SBOM of every archive of the release that brings one
// and that its record describes, and names it in the provenance: the
// file is written with the archives, before the record that names it.
func (pl *planner) sboms(ctx context.Context, r Release, prov *Provenance) error {
	for _, a := range r.Archives {
		entry, ok := prov.Archives[a.Platform.String()]
		if a.SBOM == nil || !ok {
			continue
		}
		if err := pl.keptFile(ctx, SBOMPath(r.Provider, r.Version, a.Platform), a.SBOM, MaxSBOMBytes); err != nil {
			return err
		}
		entry.SBOM = SBOMName(r.Provider, r.Version, a.Platform)
		prov.Archives[a.Platform.String()] = entry
	}
	return nil
}

// load returns a planned document, reading it from the tree the first
// time it is needed.
func (pl *planner) load(ctx context.Context, rel string, kind FileKind, decode func([]byte) (any, error), empty func() any) (*plannedDoc, error) {
	if d, ok := pl.docs[rel]; ok {
		return d, nil
	}
	data, tag, err := pl.tree.readTagged(ctx, rel, MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	d := &plannedDoc{rel: rel, kind: kind, existing: data, tag: tag, value: empty()}
	if data != nil {
		if d.value, err = decode(data); err != nil {
			return nil, fmt.Errorf("existing %s: %w", rel, err)
		}
	}
	pl.docs[rel] = d
	pl.order = append(pl.order, rel)
	return d, nil
}

func (pl *planner) index(ctx context.Context, p addrs.Provider) (*Index, error) {
	d, err := pl.load(ctx, IndexPath(p), KindIndex,
		func(b []byte) (any, error) { idx, err := DecodeIndex(b); return &idx, err },
		func() any { return &Index{Versions: map[string]struct{}{}} })
	if err != nil {
		return nil, err
	}
	return d.value.(*Index), nil
}

func (pl *planner) versionDoc(ctx context.Context, p addrs.Provider, v addrs.Version) (*VersionDoc, error) {
	d, err := pl.load(ctx, VersionPath(p, v), KindVersion,
		func(b []byte) (any, error) { doc, err := DecodeVersion(b); return &doc, err },
		func() any { return &VersionDoc{Archives: map[string]ArchiveEntry{}} })
	if err != nil {
		return nil, err
	}
	return d.value.(*VersionDoc), nil
}

func (pl *planner) provenance(ctx context.Context, p addrs.Provider, v addrs.Version) (*Provenance, bool, error) {
	d, err := pl.load(ctx, ProvenancePath(p, v), KindProvenance,
		func(b []byte) (any, error) { prov, err := DecodeProvenance(b); return &prov, err },
		func() any { return &Provenance{Archives: map[string]ProvenanceArchive{}, SigningKeys: []string{}} })
	if err != nil {
		return nil, false, err
	}
	return d.value.(*Provenance), d.existing != nil, nil
}

// documentWrites encodes every planned document that changes.
func (pl *planner) documentWrites() ([]write, error) {
	var out []write
	for _, rel := range pl.order {
		d := pl.docs[rel]
		if d.kind == KindProvenance && d.existing == nil && len(d.value.(*Provenance).Archives) == 0 {
			continue // the release brought no record
		}
		data, err := Encode(d.value)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", rel, err)
		}
		if bytes.Equal(data, d.existing) {
			pl.unchanged++
			continue
		}
		out = append(out, write{rel: rel, kind: d.kind, content: Content{Data: data}, checked: true, tag: d.tag})
	}
	return out, nil
}

// addToCatalog records the publication's providers and modules in
// catalog.json, last. Another writer changing it meanwhile makes it read
// and merge again.
func (t *Tree) addToCatalog(ctx context.Context, names catalogNames) (bool, error) {
	t.catalogMu.Lock()
	defer t.catalogMu.Unlock()
	for attempt := 0; ; attempt++ {
		changed, err := t.mergeCatalog(ctx, names)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return changed, err
		}
		if err := backoff(ctx, attempt); err != nil {
			return false, err
		}
	}
}

func (t *Tree) mergeCatalog(ctx context.Context, names catalogNames) (bool, error) {
	c, tag, _, err := t.readCatalog(ctx)
	if err != nil {
		return false, err
	}
	addP, addM := addNames(&c.Providers, names.providers), addNames(&c.Modules, names.modules)
	if !addP && !addM {
		return false, nil
	}
	out, err := Encode(c)
	if err != nil {
		return false, err
	}
	if c.Archives != nil {
		return true, t.writeCatalog(ctx, out, tag) // sealed: its signature goes first
	}
	return true, t.apply(ctx, write{rel: CatalogPath, kind: KindCatalog, content: Content{Data: out}, checked: true, tag: tag})
}

// addNames adds the names list lacks, keeping it sorted, and reports
// whether it changed.
func addNames(list *[]string, names []string) bool {
	n := len(*list)
	for _, name := range names {
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	slices.Sort(*list)
	return len(*list) != n
}
