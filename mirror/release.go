package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/syncx"
	"github.com/tfmirror/tfmirror/layout"
)

// candidate is a package the origin offers, with what it said about it.
type candidate struct {
	pkg  Package
	meta PackageMeta
}

// buildRelease mirrors one provider version: it looks up every platform,
// authenticates the release's SHA256SUMS once, fetches and checks each
// archive, and publishes those that passed.
func (b *Builder) buildRelease(ctx context.Context, r release) {
	if err := b.recheck(ctx, r); err != nil {
		b.failRelease(r, "recheck", err)
		return
	}
	advice := b.adviseKept(ctx, r)
	for _, k := range r.kept {
		pkg := Package{Provider: r.req.Provider, Version: r.version, Platform: k.plat}
		res := Result{Package: pkg, Status: StatusPresent, Bytes: k.size, KeyID: k.keyID, HashesOnly: k.hashesOnly}
		if a, ok := advice[k.plat]; ok {
			res.Advised, res.Advisories = true, a.Advisories
		}
		b.emit(res)
	}
	var failed failures
	cands := b.lookupPlatforms(ctx, r, &failed)
	if len(cands) == 0 {
		return
	}
	b.warnPlainHTTP(r, cands)
	checked := b.authenticateAll(ctx, cands, &failed)
	archives, ahead := b.fetchAll(ctx, checked)
	b.publish(ctx, r, archives, ahead, &failed)
}

// failures are the platforms of a release that failed before its
// publication, and whether every failure was the build being stopped.
type failures struct {
	mu        sync.Mutex
	platforms []string
	other     bool // a failure that is not the build being stopped
}

// fail reports a package of the release failed, and keeps its platform.
func (b *Builder) fail(f *failures, res Result) {
	b.emit(res)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.platforms = append(f.platforms, res.Platform.String())
	f.other = f.other || !errors.Is(res.Err, context.Canceled)
}

// failRelease reports every package of a release, kept or to fetch, as
// failed with err, and publishes nothing of it.
func (b *Builder) failRelease(r release, reason string, err error) {
	var plats []addrs.Platform
	for _, k := range r.kept {
		plats = append(plats, k.plat)
	}
	for _, plat := range append(plats, r.req.Platforms...) {
		pkg := Package{Provider: r.req.Provider, Version: r.version, Platform: plat}
		var rerelease *RereleaseError
		perr := forPackage(err, pkg)
		if errors.As(err, &rerelease) {
			perr = &VerificationError{Package: pkg, Problem: "re-released at the origin", Err: err}
		}
		b.emit(Result{Package: pkg, Status: StatusFailed, Reason: reason, Err: perr})
	}
}

func (b *Builder) lookupPlatforms(ctx context.Context, r release, failed *failures) []candidate {
	found := make([]*candidate, len(r.req.Platforms))
	var wg sync.WaitGroup
	for i, plat := range r.req.Platforms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i] = b.lookupPlatform(ctx, Package{Provider: r.req.Provider, Version: r.version, Platform: plat}, failed)
		}()
	}
	wg.Wait()
	var cands []candidate
	for _, c := range found {
		if c != nil {
			cands = append(cands, *c)
		}
	}
	return cands
}

// lookupPlatform reads one package's download document; requests for all
// platforms of a release go out at once.
func (b *Builder) lookupPlatform(ctx context.Context, pkg Package, failed *failures) *candidate {
	release, err := slot(ctx, b.meta)
	if err != nil {
		b.fail(failed, Result{Package: pkg, Status: StatusFailed, Reason: "package metadata", Err: &PackageError{Package: pkg, Err: err}})
		return nil
	}
	defer release()
	meta, err := b.Source.PackageMeta(ctx, pkg.Provider, pkg.Version, pkg.Platform)
	switch {
	case errors.Is(err, ErrPlatformUnavailable):
		b.missingPlatform(pkg) // never published: it holds nothing back
	case err != nil:
		b.fail(failed, Result{Package: pkg, Status: StatusFailed, Reason: "package metadata", Err: &PackageError{Package: pkg, Err: err}})
	default:
		return &candidate{pkg: pkg, meta: meta}
	}
	return nil
}

// warnPlainHTTP warns, once for the release, when the registry sends its
// archives or checksums over plain http: the bytes are still checked
// against the checksums, but anyone on the way sees what is fetched. Only
// the origins are shown: the URLs themselves may be presigned.
func (b *Builder) warnPlainHTTP(r release, cands []candidate) {
	fields, origins := map[string]bool{}, map[string]bool{}
	for _, c := range cands {
		for name, loc := range map[string]Location{
			"download_url": c.meta.Archive, "shasums_url": c.meta.Sums, "shasums_signature_url": c.meta.Signature,
		} {
			if t, ok := loc.(Transport); ok && t.Insecure() {
				fields[name], origins[t.Origin()] = true, true
			}
		}
	}
	if len(fields) == 0 {
		return
	}
	b.warn("%s %s: the registry serves %s over plain http (%s); the bytes are still checked against the release's checksums, but anyone on the network path sees what is fetched",
		r.req.Provider, r.version, strings.Join(slices.Sorted(maps.Keys(fields)), ", "), strings.Join(slices.Sorted(maps.Keys(origins)), ", "))
}

func (b *Builder) missingPlatform(pkg Package) {
	reason := fmt.Sprintf("%s %s is not published for %s", pkg.Provider, pkg.Version, pkg.Platform)
	if b.Options.Strict {
		err := &PackageError{Package: pkg, Err: fmt.Errorf("release has no package for this platform, and the build treats a missing platform as a failure (strict)")}
		b.emit(Result{Package: pkg, Status: StatusFailed, Reason: "platform not published", Err: err})
		return
	}
	b.emit(Result{Package: pkg, Status: StatusSkipped, Reason: "platform not published"})
	b.warn("%s: skipped", reason)
}

// authenticated is a candidate whose release's SHA256SUMS was verified.
type authenticated struct {
	candidate
	origin *origin
}

// origin is a release's verified SHA256SUMS, as fetched and as parsed.
type origin struct {
	doc    []byte
	sig    []byte // nil when signing was skipped
	sums   hashing.Sums
	signer Signer
	// hashesOnly names the upstream that vouched with hashes alone; the
	// kept SHA256SUMS is then made from the archives fetched.
	hashesOnly string
}

// authenticateAll fetches and verifies each distinct SHA256SUMS document
// once (normally one per release), then checks every candidate against it.
func (b *Builder) authenticateAll(ctx context.Context, cands []candidate, failed *failures) []authenticated {
	type result struct {
		origin *origin
		err    error
	}
	cache := make(map[string]result)
	var out []authenticated
	for _, c := range cands {
		key := evidenceKey(c.meta)
		r, ok := cache[key]
		if !ok {
			r.origin, r.err = b.authenticate(ctx, c)
			cache[key] = r
		}
		err := forPackage(r.err, c.pkg)
		if err == nil && c.meta.digestKnown() {
			err = checkListed(c, r.origin.sums)
		}
		if err != nil {
			b.fail(failed, Result{Package: c.pkg, Status: StatusFailed, Reason: "verification", Err: err})
			continue
		}
		out = append(out, authenticated{candidate: c, origin: r.origin})
	}
	return out
}

// evidenceKey names the evidence of a candidate's release, the same for
// every package that shares it: the SHA256SUMS and signature locations,
// or for an upstream of hashes only that keeps no SHA256SUMS, the package
// itself.
func evidenceKey(m PackageMeta) string {
	str := func(l Location) string {
		if l == nil {
			return ""
		}
		return l.String()
	}
	if m.HashesOnly != "" && m.Sums == nil {
		return "hashes only " + m.HashesOnly + " " + str(m.Archive)
	}
	return str(m.Sums) + " " + str(m.Signature)
}

// forPackage restates a release-level failure for one of its packages, so
// each package's result names its own platform.
func forPackage(err error, pkg Package) error {
	var verr *VerificationError
	var perr *PackageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &verr):
		return &VerificationError{Package: pkg, Problem: verr.Problem, Err: verr.Err}
	case errors.As(err, &perr):
		return &PackageError{Package: pkg, Err: perr.Err}
	}
	return &PackageError{Package: pkg, Err: err}
}

// authenticate fetches a release's SHA256SUMS and checks its signature under
// the trust policy.
func (b *Builder) authenticate(ctx context.Context, c candidate) (*origin, error) {
	if c.meta.HashesOnly != "" {
		return b.authenticateHashes(ctx, c)
	}
	var sig []byte
	var sigErr error
	fetched := make(chan struct{})
	go func() { // the signature, while SHA256SUMS arrives
		defer close(fetched)
		if len(c.meta.SigningKeys) > 0 {
			sig, sigErr = b.fetchSmall(ctx, c, "SHA256SUMS signature", c.meta.Signature)
		}
	}()
	doc, err := b.fetchSmall(ctx, c, "SHA256SUMS", c.meta.Sums)
	<-fetched
	if err != nil {
		return nil, err
	}
	if sigErr != nil {
		return nil, sigErr
	}
	ev := Evidence{Sums: doc, Signature: sig, Keys: c.meta.SigningKeys}
	if len(ev.Keys) > 0 {
		ev.History = b.history(ctx, c.pkg.Provider)
	}
	verdict, err := b.Options.Trust.Authenticate(b.Checker, c.pkg, ev)
	var change *KeyContinuity
	if errors.As(err, &change) {
		b.reportKeys(change)
	}
	if err != nil {
		return nil, err
	}
	for _, w := range verdict.Warnings {
		b.warn("%s", w)
	}
	b.reportKeys(verdict.Keys)
	return &origin{doc: doc, sig: sig, sums: verdict.Sums, signer: verdict.Signer}, nil
}

// reportKeys reports how a release's signer compares with the provider's
// releases the mirror holds, unless it is the same key.
func (b *Builder) reportKeys(k *KeyContinuity) {
	if k == nil || k.Status == KeySame {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.report != nil {
		b.report.Keys = append(b.report.Keys, *k)
	}
	if b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Keys: k})
	}
}

// authenticateHashes decides on a package that an upstream vouches for
// with hashes alone: the SHA256SUMS it kept (made from the digests of the
// archives it checked) or, when it keeps none, the zh: hash it lists, if
// any.
func (b *Builder) authenticateHashes(ctx context.Context, c candidate) (*origin, error) {
	var doc []byte
	switch {
	case c.meta.Sums != nil:
		var err error
		if doc, err = b.fetchSmall(ctx, c, "SHA256SUMS", c.meta.Sums); err != nil {
			return nil, err
		}
	case c.meta.digestKnown():
		doc = hashing.Sums{c.meta.Filename: c.meta.SHA256}.Format()
	}
	verdict, err := b.Options.Trust.Authenticate(b.Checker, c.pkg, Evidence{Sums: doc, HashesOnly: c.meta.HashesOnly})
	if err != nil {
		return nil, err
	}
	for _, w := range verdict.Warnings {
		b.warn("%s", w)
	}
	return &origin{doc: doc, sums: verdict.Sums, hashesOnly: verdict.HashesOnly}, nil
}

// maxSmallDocument caps SHA256SUMS and signature downloads.
const maxSmallDocument = 1 << 20

// fetchSmall fetches a SHA256SUMS document or its signature (what) from
// loc.
func (b *Builder) fetchSmall(ctx context.Context, c candidate, what string, loc Location) ([]byte, error) {
	if loc == nil {
		return nil, &PackageError{Package: c.pkg, Err: fmt.Errorf("fetch %s: the upstream names none", what)}
	}
	buf := limitedBuffer{limit: maxSmallDocument}
	if err := loc.Fetch(ctx, &buf); err != nil {
		return nil, &PackageError{Package: c.pkg, Err: fmt.Errorf("fetch %s: %w", what, err)}
	}
	return buf.Bytes(), nil
}

// checkListed requires SHA256SUMS to list the archive under the registry's
// filename with the same digest as the registry's shasum field.
func checkListed(c candidate, sums hashing.Sums) error {
	listed, ok := sums[c.meta.Filename]
	if !ok {
		return &VerificationError{Package: c.pkg, Problem: fmt.Sprintf("SHA256SUMS has no line for %q", c.meta.Filename)}
	}
	if listed != c.meta.SHA256 {
		return &VerificationError{Package: c.pkg, Problem: fmt.Sprintf(
			"the registry's shasum %s does not match SHA256SUMS %s for %q",
			hashing.ZH(c.meta.SHA256), hashing.ZH(listed), c.meta.Filename)}
	}
	return nil
}

// fetchAll downloads and checks every authenticated candidate
// concurrently, bounded by the download slots, and puts each archive that
// passed ahead into the destinations (putAhead). It returns the archives
// and, per destination (b.ahead), the first failure to put one ahead.
func (b *Builder) fetchAll(ctx context.Context, auths []authenticated) ([]fetched, []error) {
	out := make([]fetched, len(auths))
	ahead := make([]error, len(b.ahead))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, a := range auths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = b.fetchPackage(ctx, a)
			if b.gates(a.pkg.Provider) {
				return // the release's other packages may keep it out
			}
			errs := b.putAhead(ctx, out[i])
			mu.Lock()
			defer mu.Unlock()
			for d, err := range errs {
				if ahead[d] == nil {
					ahead[d] = err
				}
			}
		}()
	}
	wg.Wait()
	return out, ahead
}

// heldIncomplete holds back a release the tree does not hold yet when a
// platform asked for failed (or was interrupted): listed with the others
// alone, it would be the newest version for clients, and "init" on the
// missing platform would fail instead of taking the version before. The
// packages that passed are reported held, and a later build publishes
// the release whole; when every failure was the build being stopped,
// they are canceled like the rest. A platform fails at its download
// document, its verification or its download; one the release does not
// publish holds nothing back, even with Strict (it never comes). A
// release the tree holds already gains its new platforms as they come.
func (b *Builder) heldIncomplete(r release, ok []fetched, failed *failures) bool {
	if len(failed.platforms) == 0 || len(r.kept) > 0 {
		return false
	}
	stopped := !failed.other
	slices.Sort(failed.platforms)
	why := fmt.Sprintf("%s failed, and a version is published only with every platform asked for", strings.Join(failed.platforms, ", "))
	if !stopped {
		b.warn("%s %s is not published: %s; the next build publishes it", r.req.Provider, r.version, why)
	}
	for _, f := range ok {
		b.Work.Discard(f.archive.Staged)
		res := Result{Package: f.pkg, Status: StatusHeld, Reason: "incomplete release: " + why, Bytes: f.size, Advisories: f.advisories, Advised: f.advised}
		if stopped { // emit says canceled
			res = Result{Package: f.pkg, Status: StatusFailed, Reason: "fetch", Err: &PackageError{Package: f.pkg, Err: context.Canceled}}
		}
		b.emit(res)
	}
	return true
}

// aheadDest is a destination archives are put ahead into.
type aheadDest struct {
	to Destination
	// stopped: putting an archive ahead into it failed, and the rest of
	// the build leaves its writes to the publications.
	stopped atomic.Bool
}

// aheadDests lists the destinations in the order publish meets them.
func (b *Builder) aheadDests() []aheadDest {
	dests := make([]aheadDest, len(b.Dests))
	for i, d := range b.Dests {
		dests[i].to = d
	}
	return dests
}

// putAhead hands an archive that passed to every destination
// (Destination.PutArchiveAhead) as soon as it is ready, while the release's
// other archives still download; the publication then finds it in place.
// It returns the failures, per destination. After one, the destination
// takes no more archives ahead in this build, and the release's
// publication reports the failure without trying again: a bucket that
// refuses or throttles a write is asked once, not once per archive.
// Cancelling ctx is no failure: the publication writes what is left.
func (b *Builder) putAhead(ctx context.Context, f fetched) []error {
	if f.err != nil {
		return nil
	}
	errs := make([]error, len(b.ahead))
	for i := range b.ahead {
		d := &b.ahead[i]
		if d.stopped.Load() {
			continue
		}
		err := d.to.PutArchiveAhead(ctx, f.pkg.Provider, f.pkg.Version, f.archive)
		if err != nil && ctx.Err() == nil {
			d.stopped.Store(true)
			errs[i] = err
		}
	}
	return errs
}

// publishGrace is how long a publication that began goes on after the
// build's context ends (an interrupt): enough to write what a release
// brings, not to wait out a destination that stopped answering.
var publishGrace = 30 * time.Second

// publish hands the archives that passed to every destination, then
// reports them. A package is mirrored only if every destination took it.
// A destination that failed to take an archive ahead (ahead, in the
// order of b.ahead) is not asked again: its failure is the publication's.
func (b *Builder) publish(ctx context.Context, r release, fs []fetched, ahead []error, failed *failures) {
	rel := layout.Release{Provider: r.req.Provider, Version: r.version, VerifyExisting: b.Options.VerifyExisting}
	var ok []fetched
	for _, f := range fs {
		if f.err != nil {
			b.fail(failed, Result{Package: f.pkg, Status: StatusFailed, Reason: "fetch", Err: f.err})
			continue
		}
		ok = append(ok, f)
		rel.Archives = append(rel.Archives, f.archive)
	}
	if len(ok) == 0 || b.keptOut(r, ok) || b.heldIncomplete(r, ok, failed) {
		return
	}
	rel.Record = record(ok)
	// What was verified is published even after Ctrl-C: a publication is
	// short, and keeps the work done so far. Not forever, though: a
	// destination that no longer answers gets publishGrace.
	ctx, cancel := syncx.Grace(ctx, publishGrace)
	defer cancel()
	var errs []error
	for i, d := range b.Dests {
		err := ahead[i]
		if err == nil {
			b.setMove(rel.Archives, i == len(b.Dests)-1)
			err = d.Publish(ctx, rel)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("publish into %s: %w", d.Location(), err))
		}
	}
	err := errors.Join(errs...)
	for _, f := range ok {
		b.Work.Discard(f.archive.Staged)
		res := Result{Package: f.pkg, Status: f.status, Bytes: f.size, KeyID: f.keyID, HashesOnly: f.hashes, Advisories: f.advisories, Advised: f.advised}
		if err != nil {
			res = Result{Package: f.pkg, Status: StatusFailed, Reason: "publish", Err: publishError(f.pkg, err)}
		}
		b.emit(res)
	}
}

// setMove lets the last destination move the workspace's files into
// place, never a file of another destination.
func (b *Builder) setMove(archives []layout.Archive, last bool) {
	for i := range archives {
		archives[i].Move = last && b.Work.Owns(archives[i].Staged)
	}
}

// publishError is a publication's failure for one package: a conflict
// with what a destination holds is a verification failure.
func publishError(pkg Package, err error) error {
	var conflict *layout.ConflictError
	if errors.As(err, &conflict) {
		return &VerificationError{Package: pkg, Problem: "the mirror holds other content for this release", Err: err}
	}
	return &PackageError{Package: pkg, Err: err}
}

// record is what the tree keeps about the origin of a release's archives.
// They normally share one SHA256SUMS; the first one's is kept.
//
// For a release an upstream vouched for with hashes alone, the kept
// SHA256SUMS is made from the digests of the archives fetched (each
// checked against the upstream's hashes), and names that upstream.
func record(fs []fetched) *layout.Record {
	o := fs[0].origin
	rec := &layout.Record{
		Sums:      o.doc,
		Signature: o.sig,
		Provenance: layout.Provenance{
			Archives:    make(map[string]layout.ProvenanceArchive, len(fs)),
			KeyID:       o.signer.KeyID,
			Fingerprint: o.signer.Fingerprint,
			KeyCreated:  o.signer.Created,
			KeyExpires:  o.signer.Expires,
			SigningKeys: fs[0].keys,
			HashesOnly:  o.hashesOnly,
		},
	}
	sums := hashing.Sums{}
	for _, f := range fs {
		rec.Provenance.Archives[f.pkg.Platform.String()] = layout.ProvenanceArchive{
			Filename: f.filename, H1: f.h1Unpacked, ZH: hashing.ZH(f.digest), Size: f.size, GoVersion: f.goVersion, Catalog: f.catalog,
		}
		sums[f.filename] = f.digest
	}
	if o.hashesOnly != "" {
		rec.Sums = sums.Format()
	}
	return rec
}

// limitedBuffer is a Sink in memory that refuses to grow past limit.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.Len()+len(p) > l.limit {
		return 0, fmt.Errorf("document is larger than %d bytes", l.limit)
	}
	return l.Buffer.Write(p)
}

// Reset discards what was written.
func (l *limitedBuffer) Reset() error {
	l.Buffer.Reset()
	return nil
}
